#include "metrics/curve_rank_test.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "deep/error.h"

namespace deep500::metrics {

namespace {

constexpr int64_t kMaxSets = 100000;
constexpr uint64_t kDrawSeed = 0x5eed500;

size_t common_epochs(const Curves& a, const Curves& b) {
  size_t epochs = std::numeric_limits<size_t>::max();
  for (const Curves* set : {&a, &b})
    for (const auto& curve : *set) epochs = std::min(epochs, curve.size());
  return epochs;
}

// The pool, centred per epoch (for stable sums of squares), with its
// per-epoch sums of values and squares.
struct Pool {
  Curves curves;
  std::vector<double> sum, squares;
  size_t epochs = 0;
};

Pool make_pool(const Curves& a, const Curves& b, size_t epochs) {
  Pool p;
  p.epochs = epochs;
  p.curves = a;
  p.curves.insert(p.curves.end(), b.begin(), b.end());
  for (size_t e = 0; e < epochs; ++e) {
    double mean = 0;
    for (auto& c : p.curves) mean += c[e];
    mean /= static_cast<double>(p.curves.size());
    double sum = 0, squares = 0;
    for (auto& c : p.curves) {
      c[e] -= mean;
      sum += c[e];
      squares += c[e] * c[e];
    }
    p.sum.push_back(sum);
    p.squares.push_back(squares);
  }
  return p;
}

struct Deviation {
  double value = 0;
  size_t epoch = 0;
};

// T of the curves `set` (indices into the pool) against the rest.
Deviation set_deviation(const Pool& p, const std::vector<size_t>& set) {
  Deviation d;
  const auto in = static_cast<double>(set.size());
  const auto out = static_cast<double>(p.curves.size() - set.size());
  for (size_t e = 0; e < p.epochs; ++e) {
    double sum = 0, squares = 0;
    for (size_t k : set) sum += p.curves[k][e], squares += p.curves[k][e] * p.curves[k][e];
    const double rest_mean = (p.sum[e] - sum) / out;
    const double rest_var =
        std::max(0.0, (p.squares[e] - squares - out * rest_mean * rest_mean) / (out - 1));
    const double diff = std::fabs(sum / in - rest_mean);
    // Differences below rounding count as none.
    const double tiny = 1e-12 * (std::sqrt(p.squares[e]) + 1);
    double z = 0;
    if (rest_var > tiny * tiny)
      z = diff / std::sqrt(rest_var);
    else if (diff > tiny)
      z = std::numeric_limits<double>::infinity();
    if (z > d.value || e == 0) d = {z, e};
  }
  return d;
}

// The number of the C(N, m) sets whose T is >= `statistic`.
int64_t count_all_sets(const Pool& p, size_t m, double statistic, int64_t& sets) {
  std::vector<size_t> pick(m);
  std::iota(pick.begin(), pick.end(), 0);
  int64_t hits = 0;
  sets = 0;
  const size_t n = p.curves.size();
  while (true) {
    hits += set_deviation(p, pick).value >= statistic;
    ++sets;
    size_t i = m;
    while (i > 0 && pick[i - 1] == n - m + i - 1) --i;
    if (i == 0) return hits;
    ++pick[i - 1];
    for (size_t j = i; j < m; ++j) pick[j] = pick[j - 1] + 1;
  }
}

int64_t count_drawn_sets(const Pool& p, size_t m, double statistic) {
  std::mt19937_64 rng(kDrawSeed);
  std::vector<size_t> order(p.curves.size());
  std::iota(order.begin(), order.end(), 0);
  int64_t hits = 0;
  for (int64_t draw = 0; draw < kMaxSets; ++draw) {
    for (size_t i = 0; i < m; ++i) {  // a partial Fisher-Yates shuffle
      std::uniform_int_distribution<size_t> pick(i, order.size() - 1);
      std::swap(order[i], order[pick(rng)]);
    }
    hits +=
        set_deviation(p, {order.begin(), order.begin() + static_cast<std::ptrdiff_t>(m)}).value >=
        statistic;
  }
  return hits;
}

double binomial(int64_t n, int64_t k) {
  double c = 1;
  for (int64_t i = 1; i <= k; ++i) c = c * static_cast<double>(n - k + i) / static_cast<double>(i);
  return c;
}

void check_curves(const Curves& curves, const char* what) {
  for (size_t k = 0; k < curves.size(); ++k)
    for (size_t e = 0; e < curves[k].size(); ++e)
      DEEP500_CHECK(std::isfinite(curves[k][e]), "curve rank test: ", what, " curve ", k + 1,
                    " is not finite at epoch ", e + 1);
}

}  // namespace

double smallest_rank_p_value(int64_t reference, int64_t runs) {
  return 1 / binomial(reference + runs, runs);
}

CurveRankResult curve_rank_test(const Curves& reference, const Curves& runs) {
  DEEP500_CHECK(reference.size() >= 2, "curve rank test: needs at least 2 reference curves, got ",
                reference.size());
  DEEP500_CHECK(!runs.empty(), "curve rank test: no run curve");
  check_curves(reference, "reference");
  check_curves(runs, "run");
  CurveRankResult r;
  r.epochs = common_epochs(reference, runs);
  DEEP500_CHECK(r.epochs > 0, "curve rank test: no epoch that every curve has");
  for (size_t e = 0; e < r.epochs; ++e) {
    double sum = 0;
    for (const auto& c : runs) sum += c[e];
    r.run_mean.push_back(sum / static_cast<double>(runs.size()));
  }
  const Pool pool = make_pool(reference, runs, r.epochs);
  std::vector<size_t> run_set(runs.size());
  std::iota(run_set.begin(), run_set.end(), reference.size());
  const Deviation own = set_deviation(pool, run_set);
  r.statistic = own.value;
  r.worst_epoch = own.epoch;
  // T equal up to rounding counts as a tie.
  const double at_least = std::isinf(r.statistic) ? r.statistic : r.statistic * (1 - 1e-9);
  const size_t m = runs.size();
  if (binomial(static_cast<int64_t>(pool.curves.size()), static_cast<int64_t>(m)) <= kMaxSets) {
    const int64_t hits = count_all_sets(pool, m, at_least, r.subsets);
    r.p_value = static_cast<double>(hits) / static_cast<double>(r.subsets);
  } else {
    r.sampled = true;
    r.subsets = kMaxSets;
    r.p_value = static_cast<double>(1 + count_drawn_sets(pool, m, at_least)) /
                static_cast<double>(1 + kMaxSets);
  }
  return r;
}

double curve_deviation_threshold(const Curves& reference, double alpha) {
  DEEP500_CHECK(reference.size() >= 3, "curve band: needs at least 3 reference curves, got ",
                reference.size());
  check_curves(reference, "reference");
  const size_t epochs = common_epochs(reference, reference);
  DEEP500_CHECK(epochs > 0, "curve band: no epoch that every reference curve has");
  const Pool pool = make_pool(reference, {}, epochs);
  std::vector<double> d;
  for (size_t k = 0; k < reference.size(); ++k) d.push_back(set_deviation(pool, {k}).value);
  std::sort(d.begin(), d.end());
  const double n = static_cast<double>(d.size());
  const auto rank = static_cast<size_t>(std::ceil((1 - alpha) * (n + 1) - 1e-9));
  return d[std::min(std::max<size_t>(rank, 1), d.size()) - 1];
}

}  // namespace deep500::metrics
