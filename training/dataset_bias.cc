#include "training/dataset_bias.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "deep/error.h"

namespace deep500::training {

DatasetBias bias_from_counts(std::vector<int64_t> counts) {
  DEEP500_CHECK(!counts.empty(), "DatasetBias: no classes");
  DatasetBias b;
  for (int64_t c : counts) {
    DEEP500_CHECK(c >= 0, "DatasetBias: negative count ", c);
    b.total += c;
  }
  b.counts = std::move(counts);
  if (b.total > 0) {
    for (int64_t c : b.counts) {
      if (c == 0) continue;
      const double p = static_cast<double>(c) / static_cast<double>(b.total);
      b.entropy -= p * std::log(p);
    }
  }
  b.kl_to_uniform = std::log(static_cast<double>(b.counts.size())) - b.entropy;
  const auto [lo, hi] = std::minmax_element(b.counts.begin(), b.counts.end());
  b.max_min_ratio = *lo == 0 ? std::numeric_limits<double>::infinity()
                             : static_cast<double>(*hi) / static_cast<double>(*lo);
  return b;
}

std::string DatasetBias::summary() const {
  std::string s = cat("DatasetBias: ", total, " draws over ", counts.size(), " classes [");
  for (size_t i = 0; i < counts.size(); ++i) s += cat(i ? " " : "", counts[i]);
  return s + cat("], entropy ", entropy, " nats, KL to uniform ", kl_to_uniform, ", max/min ",
                 max_min_ratio);
}

DatasetBias dataset_bias(const Dataset& d, Sampler& sampler, int64_t num_classes,
                         const std::atomic<bool>* interrupt) {
  DEEP500_CHECK(num_classes >= 0, "DatasetBias: negative class count ", num_classes);
  if (num_classes == 0) num_classes = d.num_classes();
  const SamplerState saved = sampler.state();
  sampler.restore({saved.epoch, 0});
  std::vector<int64_t> counts(static_cast<size_t>(num_classes), 0);
  bool complete = true;
  try {
    for (auto batch = sampler.next(); !batch.empty() && complete; batch = sampler.next()) {
      for (int64_t i : batch) {
        if (interrupt && interrupt->load()) {
          complete = false;
          break;
        }
        const int64_t c = d.label(i);
        DEEP500_CHECK(c >= 0, "DatasetBias: ", d.describe(), ": negative label ", c, " of sample ",
                      i);
        if (c >= static_cast<int64_t>(counts.size())) {
          // Only when the class count is inferred from the labels.
          DEEP500_CHECK(num_classes == 0, "DatasetBias: ", d.describe(), ": label ", c,
                        " of sample ", i, " is outside [0, ", num_classes, ")");
          counts.resize(static_cast<size_t>(c + 1), 0);
        }
        ++counts[static_cast<size_t>(c)];
      }
    }
  } catch (...) {
    sampler.restore(saved);
    throw;
  }
  sampler.restore(saved);
  if (counts.empty()) counts.push_back(0);  // interrupted before any label
  DatasetBias b = bias_from_counts(std::move(counts));
  b.complete = complete;
  return b;
}

}  // namespace deep500::training
