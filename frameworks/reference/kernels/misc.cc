// Miscellaneous ops: NonMaxSuppression, TfIdfVectorizer, StringNormalizer.
#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <set>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

// boxes [B, N, 4], scores [B, C, N], max_output_boxes_per_class?, iou_threshold?,
// score_threshold? -> selected_indices [K, 3] (batch, class, box).
class NonMaxSuppressionOp final : public Operator {
 public:
  explicit NonMaxSuppressionOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    center_ = ctx.node.attributes.get_int("center_point_box", 0) != 0;
    DEEP500_CHECK(ctx.num_inputs() >= 2 && ctx.num_inputs() <= 5, node_,
                  ": expected 2 to 5 inputs, got ", ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &boxes = in[0], &scores = in[1];
    DEEP500_CHECK(boxes.rank() == 3 && boxes.dim(2) == 4 && scores.rank() == 3 &&
                      scores.dim(0) == boxes.dim(0) && scores.dim(2) == boxes.dim(1),
                  node_, ": expected boxes [B, N, 4] and scores [B, C, N], got ",
                  to_string(boxes.shape()), " and ", to_string(scores.shape()));
    const Tensor* mo = ops::optional_input(in, 2);
    const Tensor* it = ops::optional_input(in, 3);
    const Tensor* st = ops::optional_input(in, 4);
    const int64_t max_out = mo && mo->numel() ? static_cast<int64_t>(mo->at_as_double(0)) : 0;
    const double iou_th = it && it->numel() ? it->at_as_double(0) : 0.0;
    const bool has_score_th = st && st->numel();
    const double score_th = has_score_th ? st->at_as_double(0) : 0.0;
    const int64_t B = boxes.dim(0), N = boxes.dim(1), C = scores.dim(1);
    std::vector<double> bx = boxes.to_double_vector(), sc = scores.to_double_vector();
    // Corners as (y1, x1, y2, x2) with y1 <= y2, x1 <= x2.
    std::vector<double> corners(bx.size());
    for (int64_t i = 0; i < B * N; ++i) {
      const double* b = &bx[i * 4];
      double y1, x1, y2, x2;
      if (center_) {
        x1 = b[0] - b[2] / 2, x2 = b[0] + b[2] / 2, y1 = b[1] - b[3] / 2, y2 = b[1] + b[3] / 2;
      } else {
        y1 = b[0], x1 = b[1], y2 = b[2], x2 = b[3];
      }
      double* c = &corners[i * 4];
      c[0] = std::min(y1, y2), c[1] = std::min(x1, x2), c[2] = std::max(y1, y2);
      c[3] = std::max(x1, x2);
    }
    auto iou = [&](const double* a, const double* b) {
      double h = std::min(a[2], b[2]) - std::max(a[0], b[0]);
      double w = std::min(a[3], b[3]) - std::max(a[1], b[1]);
      if (h <= 0 || w <= 0) return 0.0;
      double inter = h * w;
      double uni = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
      return uni > 0 ? inter / uni : 0.0;
    };
    std::vector<int64_t> sel;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c) {
        const double* s = &sc[(b * C + c) * N];
        std::vector<int64_t> order;
        for (int64_t i = 0; i < N; ++i)
          if (!has_score_th || s[i] > score_th) order.push_back(i);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t x, int64_t y) { return s[x] > s[y]; });
        std::vector<int64_t> kept;
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_out) break;
          bool keep = true;
          for (int64_t k : kept)
            if (iou(&corners[(b * N + i) * 4], &corners[(b * N + k) * 4]) > iou_th) keep = false;
          if (keep) kept.push_back(i);
        }
        for (int64_t k : kept) sel.insert(sel.end(), {b, c, k});
      }
    const int64_t k = static_cast<int64_t>(sel.size()) / 3;
    ops::ensure_output(out, 0, DataType::Int64, {k, 3})
        .copy_from(Tensor::from_vector<int64_t>({k, 3}, sel));
  }

 private:
  std::string node_;
  bool center_ = false;
};

// Counts pooled n-grams (with skips) per row of a 1-D or 2-D input.
class TfIdfVectorizerOp final : public Operator {
 public:
  explicit TfIdfVectorizerOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    const auto& at = ctx.node.attributes;
    min_n_ = at.get_int("min_gram_length");
    max_n_ = at.get_int("max_gram_length");
    max_skip_ = at.get_int("max_skip_count");
    std::string mode = at.get_string("mode");
    DEEP500_CHECK(mode == "TF" || mode == "IDF" || mode == "TFIDF", node_,
                  ": mode must be TF, IDF or TFIDF, got '", mode, "'");
    mode_ = mode == "TF" ? 0 : mode == "IDF" ? 1 : 2;
    DEEP500_CHECK(min_n_ >= 1 && max_n_ >= min_n_ && max_skip_ >= 0, node_,
                  ": need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
    auto counts = at.get_ints("ngram_counts");
    auto indexes = at.get_ints("ngram_indexes");
    weights_ = at.get_floats("weights", {});
    std::vector<std::string> pool = at.get_strings("pool_strings", {});
    if (pool.empty())
      for (auto v : at.get_ints("pool_int64s", {})) pool.push_back(std::to_string(v));
    strings_ = at.has("pool_strings");
    DEEP500_CHECK(std::all_of(counts.begin(), counts.end(), [](int64_t c) { return c >= 0; }) &&
                      std::all_of(indexes.begin(), indexes.end(), [](int64_t i) { return i >= 0; }),
                  node_, ": ngram_counts and ngram_indexes must be >= 0");
    int64_t item = 0;
    for (size_t g = 0; g < counts.size(); ++g) {
      const int64_t n = static_cast<int64_t>(g) + 1;
      const int64_t end = g + 1 < counts.size() ? counts[g + 1] : static_cast<int64_t>(pool.size());
      DEEP500_CHECK(counts[g] <= end && end <= static_cast<int64_t>(pool.size()) &&
                        (end - counts[g]) % n == 0,
                    node_, ": ngram_counts do not split the pool of ", pool.size(),
                    " items into whole ", n, "-grams");
      for (int64_t s = counts[g]; s < end; s += n, ++item) {
        DEEP500_CHECK(item < static_cast<int64_t>(indexes.size()), node_,
                      ": fewer ngram_indexes than n-grams in the pool");
        pool_[std::vector<std::string>(pool.begin() + s, pool.begin() + s + n)] = indexes[item];
      }
    }
    for (auto i : indexes) out_dim_ = std::max(out_dim_, i + 1);
    DEEP500_CHECK(weights_.empty() || weights_.size() == indexes.size(), node_,
                  ": weights must match ngram_indexes");
    for (size_t k = 0; k < indexes.size(); ++k)
      weight_of_[indexes[k]] = weights_.empty() ? 1.0f : weights_[k];
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    DEEP500_CHECK(x.rank() == 1 || x.rank() == 2, node_, ": input must be 1-D or 2-D, got ",
                  to_string(x.shape()));
    DEEP500_CHECK((x.dtype() == DataType::String) == strings_, node_, ": input type ",
                  name_of(x.dtype()), " does not match the pool type");
    std::vector<std::string> tok;
    if (strings_) {
      const std::string* d = x.data<std::string>();
      tok.assign(d, d + x.numel());
    } else {
      for (auto v : x.cast(DataType::Int64).to_int64_vector()) tok.push_back(std::to_string(v));
    }
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, len = x.dim(-1);
    Shape os = x.rank() == 2 ? Shape{rows, out_dim_} : Shape{out_dim_};
    // The output first: its size (from ngram_indexes) is checked against the
    // memory budget before any row is counted.
    float* y = ops::ensure_output(out, 0, DataType::Float, os).data<float>();
    std::vector<double> counts;
    for (int64_t r = 0; r < rows; ++r) {
      const std::string* row = tok.data() + r * len;
      counts.assign(out_dim_, 0.0);
      // Unigrams are counted once (skips do not change them).
      for (int64_t skip = 0; skip <= max_skip_; ++skip)
        for (int64_t n = std::max(min_n_, skip > 0 ? int64_t{2} : int64_t{1}); n <= max_n_; ++n)
          for (int64_t s = 0; s + (n - 1) * (skip + 1) < len; ++s) {
            std::vector<std::string> g;
            for (int64_t k = 0; k < n; ++k) g.push_back(row[s + k * (skip + 1)]);
            auto hit = pool_.find(g);
            if (hit != pool_.end()) counts[hit->second] += 1;
          }
      for (int64_t j = 0; j < out_dim_; ++j) {
        double w = weight_of_.count(j) ? weight_of_[j] : 1.0;
        double v = mode_ == 0 ? counts[j] : mode_ == 1 ? (counts[j] > 0 ? w : 0.0) : counts[j] * w;
        y[r * out_dim_ + j] = static_cast<float>(v);
      }
    }
  }

 private:
  std::string node_;
  int64_t min_n_ = 1, max_n_ = 1, max_skip_ = 0, mode_ = 0, out_dim_ = 0;
  bool strings_ = false;
  std::vector<float> weights_;
  std::map<std::vector<std::string>, int64_t> pool_;
  std::map<int64_t, double> weight_of_;
};

std::string change_case(std::string s, bool upper) {
  for (auto& ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    ch = static_cast<char>(upper ? std::toupper(c) : std::tolower(c));
  }
  return s;
}

// Drops stop words and changes case of a [C] or [1, C] string tensor. ASCII
// case mapping (the `locale` attribute is accepted but not used).
class StringNormalizerOp final : public Operator {
 public:
  explicit StringNormalizerOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    const auto& at = ctx.node.attributes;
    action_ = at.get_string("case_change_action", "NONE");
    DEEP500_CHECK(action_ == "NONE" || action_ == "LOWER" || action_ == "UPPER", node_,
                  ": case_change_action must be NONE, LOWER or UPPER, got '", action_, "'");
    sensitive_ = at.get_int("is_case_sensitive", 0) != 0;
    for (const auto& w : at.get_strings("stopwords", {}))
      stop_.insert(sensitive_ ? w : change_case(w, false));
    DEEP500_CHECK(ctx.num_inputs() == 1 && ctx.inputs[0].dtype == DataType::String, node_,
                  ": expected one string input");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    DEEP500_CHECK(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1), node_,
                  ": input must be [C] or [1, C], got ", to_string(x.shape()));
    std::vector<std::string> kept;
    const std::string* d = x.data<std::string>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (stop_.count(sensitive_ ? d[i] : change_case(d[i], false))) continue;
      if (action_ == "NONE")
        kept.push_back(d[i]);
      else
        kept.push_back(change_case(d[i], action_ == "UPPER"));
    }
    if (kept.empty()) kept.push_back("");  // ONNX: an all-stopword input yields one empty string
    const int64_t n = static_cast<int64_t>(kept.size());
    Shape os = x.rank() == 1 ? Shape{n} : Shape{1, n};
    out[0] = Tensor::from_vector<std::string>(os, kept);
  }

 private:
  std::string node_, action_;
  bool sensitive_ = false;
  std::set<std::string> stop_;
};

}  // namespace

void register_misc(Registry& r) {
  add_kernel<NonMaxSuppressionOp>(r, "NonMaxSuppression");
  add_kernel<TfIdfVectorizerOp>(r, "TfIdfVectorizer");
  add_kernel<StringNormalizerOp>(r, "StringNormalizer");
}

}  // namespace deep500::reference
