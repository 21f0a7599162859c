#include "metrics/significance.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <boost/math/distributions/normal.hpp>

#include "deep/error.h"

namespace deep500::metrics {
namespace {

// Midranks (1-based) of the pooled values and the tie term sum(t^3 - t).
std::vector<double> midranks(const std::vector<double>& pooled, double& tie_term) {
  std::vector<size_t> order(pooled.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t i, size_t j) { return pooled[i] < pooled[j]; });
  std::vector<double> rank(pooled.size());
  tie_term = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && pooled[order[j + 1]] == pooled[order[i]]) ++j;
    const double mid = (static_cast<double>(i + j) + 2) / 2;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = mid;
    const double t = static_cast<double>(j - i + 1);
    tie_term += t * t * t - t;
    i = j + 1;
  }
  return rank;
}

// P(U >= u) under the null hypothesis, by counting the arrangements of
// samples of n and m values without ties: c(u; n, m) = c(u - m; n - 1, m)
// + c(u; n, m - 1).
double exact_upper_tail(int64_t u, int64_t n, int64_t m) {
  // counts[j][v]: arrangements of i first-sample and j second-sample values with U = v.
  const int64_t max_u = n * m;
  std::vector<std::vector<double>> prev(static_cast<size_t>(m + 1)), cur(prev.size());
  for (int64_t j = 0; j <= m; ++j) prev[static_cast<size_t>(j)] = {1.0};  // i = 0: U = 0
  for (int64_t i = 1; i <= n; ++i) {
    cur[0] = {1.0};
    for (int64_t j = 1; j <= m; ++j) {
      std::vector<double> c(static_cast<size_t>(i * j + 1), 0.0);
      const auto& left = prev[static_cast<size_t>(j)];     // (i - 1, j), shifted by j
      const auto& down = cur[static_cast<size_t>(j - 1)];  // (i, j - 1)
      for (size_t v = 0; v < left.size(); ++v) c[v + static_cast<size_t>(j)] += left[v];
      for (size_t v = 0; v < down.size(); ++v) c[v] += down[v];
      cur[static_cast<size_t>(j)] = std::move(c);
    }
    std::swap(prev, cur);
  }
  const auto& counts = prev[static_cast<size_t>(m)];
  double total = 0, upper = 0;
  for (int64_t v = 0; v <= max_u; ++v) {
    total += counts[static_cast<size_t>(v)];
    if (v >= u) upper += counts[static_cast<size_t>(v)];
  }
  return upper / total;
}

double normal_upper_tail(double z) {
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

}  // namespace

TestResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  DEEP500_CHECK(!a.empty() && !b.empty(), "mann_whitney_u: both samples need values (got ",
                a.size(), " and ", b.size(), ")");
  std::vector<double> pooled(a);
  pooled.insert(pooled.end(), b.begin(), b.end());
  double tie_term = 0;
  const std::vector<double> rank = midranks(pooled, tie_term);
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  const double r1 = std::accumulate(rank.begin(), rank.begin() + static_cast<long>(a.size()), 0.0);
  TestResult t;
  t.statistic = r1 - n1 * (n1 + 1) / 2;
  const double u = std::max(t.statistic, n1 * n2 - t.statistic);
  if (tie_term == 0 && std::min(a.size(), b.size()) <= 8) {
    t.p_value =
        2 * exact_upper_tail(static_cast<int64_t>(std::llround(u)), static_cast<int64_t>(a.size()),
                             static_cast<int64_t>(b.size()));
  } else {
    const double n = n1 + n2;
    const double var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
    t.p_value = var > 0 ? 2 * normal_upper_tail((u - n1 * n2 / 2 - 0.5) / std::sqrt(var)) : 1;
  }
  t.p_value = std::min(1.0, t.p_value);
  return t;
}

TestResult two_proportion_z(double xa, double na, double xb, double nb) {
  DEEP500_CHECK(na > 0 && nb > 0 && xa >= 0 && xb >= 0 && xa <= na && xb <= nb,
                "two_proportion_z: expected 0 <= successes <= trials and trials > 0, got ", xa, "/",
                na, " and ", xb, "/", nb);
  const double pooled = (xa + xb) / (na + nb);
  const double se = std::sqrt(pooled * (1 - pooled) * (1 / na + 1 / nb));
  TestResult t;
  if (se == 0) return t;  // both all-success or all-failure: identical
  t.statistic = (xa / na - xb / nb) / se;
  t.p_value = std::min(1.0, 2 * normal_upper_tail(std::fabs(t.statistic)));
  return t;
}

RatioInterval hodges_lehmann_ratio(const std::vector<double>& a, const std::vector<double>& b,
                                   double confidence) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto positive = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return x > 0 && std::isfinite(x); });
  };
  if (a.size() < 2 || b.size() < 2 || !positive(a) || !positive(b)) return {nan, nan, nan};
  std::vector<double> d;
  d.reserve(a.size() * b.size());
  for (double x : a)
    for (double y : b) d.push_back(std::log(y) - std::log(x));
  std::sort(d.begin(), d.end());
  const size_t n = d.size();
  const double median = n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2]);
  const double m = static_cast<double>(a.size()), k = static_cast<double>(b.size());
  const double z = boost::math::quantile(boost::math::normal(), 0.5 + confidence / 2);
  const double count = std::floor(m * k / 2 - z * std::sqrt(m * k * (m + k + 1) / 12));
  const size_t low = static_cast<size_t>(std::max(1.0, count));  // 1-based
  return {std::exp(median), std::exp(d[low - 1]), std::exp(d[n - low])};
}

std::vector<double> holm_adjusted(const std::vector<double>& p_values) {
  std::vector<size_t> order(p_values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t x, size_t y) { return p_values[x] < p_values[y]; });
  std::vector<double> out(p_values.size());
  double running = 0;
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const double scaled = static_cast<double>(order.size() - rank) * p_values[order[rank]];
    running = std::max(running, std::min(1.0, scaled));
    out[order[rank]] = running;
  }
  return out;
}

}  // namespace deep500::metrics
