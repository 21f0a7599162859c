#include "metrics/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "deep/error.h"

namespace deep500::metrics {
namespace {

double sorted_percentile(const std::vector<double>& x, double p) {
  const double h = (static_cast<double>(x.size()) - 1) * p / 100.0;
  const auto lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= x.size()) return x.back();
  return x[lo] + (h - static_cast<double>(lo)) * (x[lo + 1] - x[lo]);
}

// P(B = i) for B ~ Binomial(n, 1/2), in log space so that large n does not
// underflow 2^-n.
double binomial_half_pmf(int64_t n, int64_t i) {
  const double dn = static_cast<double>(n), di = static_cast<double>(i);
  return std::exp(std::lgamma(dn + 1) - std::lgamma(di + 1) - std::lgamma(dn - di + 1) -
                  dn * std::log(2.0));
}

}  // namespace

double median(std::vector<double> samples) {
  return percentile(std::move(samples), 50);
}

double percentile(std::vector<double> samples, double p) {
  DEEP500_CHECK(!samples.empty(), "percentile: no samples");
  DEEP500_CHECK(p >= 0 && p <= 100, "percentile: p must be in [0, 100], got ", p);
  std::sort(samples.begin(), samples.end());
  return sorted_percentile(samples, p);
}

std::pair<int64_t, int64_t> median_ci_ranks(int64_t n, double confidence) {
  DEEP500_CHECK(confidence > 0 && confidence < 1,
                "median_ci_ranks: confidence must be in (0, 1), got ", confidence);
  const double tail = (1 - confidence) / 2;
  // Largest j with P(B <= j - 1) <= tail; the interval is symmetric: k = n + 1 - j.
  double cdf = 0;
  int64_t j = 0;
  for (int64_t i = 0; i < n; ++i) {
    cdf += binomial_half_pmf(n, i);
    if (cdf > tail) break;
    j = i + 1;
  }
  if (j < 1 || j > n + 1 - j) return {0, 0};
  return {j, n + 1 - j};
}

double median_ci_coverage(int64_t n, int64_t j, int64_t k) {
  double p = 0;
  for (int64_t i = j; i < k; ++i) p += binomial_half_pmf(n, i);
  return p;
}

Summary summarize(std::vector<double> x, const StatisticsOptions& o) {
  Summary s;
  s.n = static_cast<int64_t>(x.size());
  if (x.empty()) {
    s.wide_spread = true;
    s.warning = "no samples";
    return s;
  }
  std::sort(x.begin(), x.end());
  s.min = x.front();
  s.max = x.back();
  s.median = sorted_percentile(x, 50);
  s.p50 = s.median;
  s.p25 = sorted_percentile(x, 25);
  s.p75 = sorted_percentile(x, 75);
  s.iqr = s.p75 - s.p25;
  s.p90 = sorted_percentile(x, 90);
  s.p99 = sorted_percentile(x, 99);
  s.mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
  if (x.size() > 1) {
    double ss = 0;
    for (double v : x) ss += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(x.size() - 1));
  }
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0;
  std::vector<double> deviations;
  for (double v : x) deviations.push_back(std::fabs(v - s.median));
  s.mad = median(std::move(deviations));
  s.robust_cv = s.median != 0 ? 1.4826 * s.mad / s.median : 0;

  auto [j, k] = median_ci_ranks(s.n, o.confidence);
  s.ci_valid = j > 0;
  if (s.ci_valid) {
    s.ci_low = x[static_cast<size_t>(j - 1)];
    s.ci_high = x[static_cast<size_t>(k - 1)];
    s.ci_confidence = median_ci_coverage(s.n, j, k);
  } else {
    s.ci_low = s.min;
    s.ci_high = s.max;
    s.ci_confidence = 1 - 2 * std::pow(0.5, static_cast<double>(s.n));
  }

  std::string why;
  if (!s.ci_valid)
    why = cat(s.n, " samples are too few for a ", o.confidence * 100,
              "% confidence interval of the median (need >= 6 at 95%)");
  // Half-width taken on the wider side: the interval need not be symmetric.
  const double half = std::max(s.median - s.ci_low, s.ci_high - s.median);
  if (s.ci_valid && s.median > 0 && half > o.max_ci_half_width * s.median)
    why = cat("CI half-width is ", 100 * half / s.median, "% of the median (limit ",
              100 * o.max_ci_half_width, "%)");
  if (s.robust_cv > o.max_robust_cv)
    why += cat(why.empty() ? "" : "; ", "robust CV (1.4826 MAD / median) is ", 100 * s.robust_cv,
               "% (limit ", 100 * o.max_robust_cv, "%)");
  s.wide_spread = !why.empty();
  s.warning = why;
  return s;
}

ProcessSpread process_spread(const std::vector<std::vector<double>>& samples_per_process) {
  ProcessSpread p;
  std::vector<double> within;
  for (const auto& samples : samples_per_process) {
    if (samples.empty()) continue;
    const Summary s = summarize(samples);
    p.medians.push_back(s.median);
    within.push_back(s.robust_cv);
  }
  if (p.medians.empty()) return p;
  p.within = median(within);
  p.between = p.medians.size() > 1 ? summarize(p.medians).cv : 0;
  return p;
}

}  // namespace deep500::metrics
