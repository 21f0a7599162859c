#include "training/planted_bugs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <unordered_map>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::training {

namespace {

constexpr const char* kForms =
    "expected labels-shuffled:FRACTION, gradient-dropped:RANK or mean-divisor:N";

class ShuffledLabels : public Dataset {
 public:
  ShuffledLabels(const Dataset& d, std::unordered_map<int64_t, int64_t> source, double fraction)
      : d_(d), source_(std::move(source)), fraction_(fraction) {}
  std::string describe() const override {
    return cat(d_.describe(), " (planted bug: labels of ", source_.size(), " samples shuffled, ",
               short_number(fraction_ * 100), "%)");
  }
  int64_t size() const override { return d_.size(); }
  std::vector<FieldDesc> fields() const override { return d_.fields(); }
  int64_t num_classes() const override { return d_.num_classes(); }
  void fill(int64_t index, Batch& out, int64_t row) const override {
    d_.fill(index, out, row);
    auto it = source_.find(index);
    if (it == source_.end()) return;
    Batch other = allocate_batch(d_, 1);
    d_.fill(it->second, other, 0);
    const Tensor& from = other.at("label");
    std::memcpy(static_cast<unsigned char*>(out.at("label").raw()) + row * from.nbytes(),
                from.raw(), from.nbytes());
  }
  int64_t label(int64_t index) const override {
    auto it = source_.find(index);
    return d_.label(it == source_.end() ? index : it->second);
  }

 private:
  const Dataset& d_;
  std::unordered_map<int64_t, int64_t> source_;  // sample -> the sample whose label it gets
  double fraction_;
};

int64_t whole_number(const std::string& text, const std::string& value, const std::string& what,
                     int64_t low) {
  int64_t n = 0;
  DEEP500_CHECK(parse_int(value, n) && n >= low, what, ": '", text,
                "': expected a whole number >= ", low, ", got '", value, "'");
  return n;
}

}  // namespace

PlantedBugs parse_planted_bugs(const std::vector<std::string>& texts, const std::string& what) {
  PlantedBugs b;
  for (const auto& text : texts) {
    const size_t colon = text.find(':');
    DEEP500_CHECK(colon != std::string::npos, what, ": '", text, "': ", kForms);
    const std::string name = text.substr(0, colon), value = text.substr(colon + 1);
    if (name == "labels-shuffled") {
      DEEP500_CHECK(
          parse_float(value, b.labels_shuffled) && b.labels_shuffled > 0 && b.labels_shuffled <= 1,
          what, ": '", text, "': expected a fraction in (0, 1], got '", value, "'");
    } else if (name == "gradient-dropped") {
      b.gradient_dropped = static_cast<int>(whole_number(text, value, what, 0));
    } else if (name == "mean-divisor") {
      b.mean_divisor = static_cast<int>(whole_number(text, value, what, 1));
    } else {
      throw Error(cat(what, ": '", text, "': ", kForms));
    }
  }
  return b;
}

std::unique_ptr<Dataset> shuffle_labels(const Dataset& d, double fraction, uint64_t seed) {
  DEEP500_CHECK(fraction > 0 && fraction <= 1, "labels-shuffled: expected a fraction in (0, 1]");
  const auto fields = d.fields();
  DEEP500_CHECK(std::any_of(fields.begin(), fields.end(),
                            [](const FieldDesc& f) { return f.name == "label"; }),
                d.describe(), ": labels-shuffled needs a 'label' field");
  std::vector<int64_t> order(static_cast<size_t>(d.size()));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed ^ 0x1abe15ULL);
  std::shuffle(order.begin(), order.end(), rng);
  const auto picked = static_cast<size_t>(std::llround(fraction * static_cast<double>(d.size())));
  std::unordered_map<int64_t, int64_t> source;
  for (size_t i = 0; picked > 1 && i < picked; ++i) source[order[i]] = order[(i + 1) % picked];
  return std::make_unique<ShuffledLabels>(d, std::move(source), fraction);
}

}  // namespace deep500::training
