// Statistics of repeated measurements after Hoefler & Belli, "Scientific
// benchmarking of parallel computing systems" (SC'15): report the median with
// a nonparametric confidence interval, the CV, and warn when the spread is
// too wide to draw conclusions (ARCHITECTURE.md idea 5). The warning uses a
// spread robust to outliers (the scaled median absolute deviation over the
// median), not the CV: on a shared machine one preempted repetition in a
// hundred makes the CV huge while the median and its interval stay tight.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace deep500::metrics {

struct StatisticsOptions {
  double confidence = 0.95;         // of the median's interval
  double max_ci_half_width = 0.05;  // relative to the median; wider -> wide_spread
  double max_robust_cv = 0.10;      // larger robust_cv -> wide_spread
};

struct Summary {
  int64_t n = 0;
  double median = 0, mean = 0, stddev = 0;  // stddev: sample (n - 1) estimator
  double min = 0, max = 0;
  double cv = 0;                     // stddev / mean (reported; outliers inflate it)
  double p25 = 0, p50 = 0, p75 = 0;  // linear interpolation between order statistics
  double p90 = 0, p99 = 0;
  double iqr = 0;  // p75 - p25
  double mad = 0;  // median of |x - median|
  // 1.4826 * mad / median: equals the CV for normal samples, and moves
  // little when a few samples are outliers.
  double robust_cv = 0;
  // Nonparametric confidence interval of the median: [ci_low, ci_high] are
  // order statistics. ci_valid is false when n is too small for the
  // requested confidence (n < 6 at 95%); the interval is then [min, max].
  double ci_low = 0, ci_high = 0;
  double ci_confidence = 0;  // the achieved (exact binomial) coverage, >= requested
  bool ci_valid = false;
  bool wide_spread = false;  // CI half-width or robust_cv above the thresholds, or no valid CI
  std::string warning;       // why wide_spread is set; empty otherwise
};

Summary summarize(std::vector<double> samples, const StatisticsOptions& options = {});

// The same measurement repeated in several processes (pyperf's worker
// processes): how much its samples spread within one process, and how much
// the processes' medians spread between them. `within`: the median over the
// processes of each one's robust CV (1.4826 x MAD / median, so that a few
// preempted samples do not count); `between`: the CV (standard deviation /
// mean) of the processes' medians, so that one process that lands on a
// slower level counts in full. A between well above within means a
// process draws its own level (memory layout, placement, clocks), which
// repetitions in one process cannot show.
struct ProcessSpread {
  std::vector<double> medians;  // per process
  double within = 0, between = 0;
};
ProcessSpread process_spread(const std::vector<std::vector<double>>& samples_per_process);

double median(std::vector<double> samples);
// Percentile p in [0, 100] with linear interpolation (NumPy's default).
double percentile(std::vector<double> samples, double p);

// 1-based ranks (j, k) of the order statistics X_(j) <= X_(k) that bound a
// confidence interval of the median of n samples: the symmetric choice with
// P(X_(j) <= median <= X_(k)) >= confidence for a continuous distribution,
// from the Binomial(n, 1/2) distribution of the number of samples below the
// median (Le Boudec, "Performance Evaluation of Computer and Communication
// Systems", 2010, Thm. 2.1). Returns {0, 0} when no such pair exists.
std::pair<int64_t, int64_t> median_ci_ranks(int64_t n, double confidence = 0.95);
// The exact coverage of the ranks above: P(j <= B < k), B ~ Binomial(n, 1/2).
double median_ci_coverage(int64_t n, int64_t j, int64_t k);

}  // namespace deep500::metrics
