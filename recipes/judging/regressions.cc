#include "recipes/judging/regressions.h"

#include <algorithm>
#include <map>

#include "deep/error.h"
#include "deep/text.h"
#include "metrics/significance.h"
#include "recipes/judging/comparison.h"

namespace deep500::recipes {

namespace {

constexpr int kMinimumSide = 3;  // runs on each side of a split

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Runs grouped into series, each in start order, from its last accepted run.
std::vector<std::vector<const RunRecord*>> series_of(const std::vector<RunRecord>& runs,
                                                     const std::set<int64_t>& accepted) {
  std::map<std::string, std::vector<const RunRecord*>> by_key;
  for (const auto& r : runs)
    if (r.status != "interrupted")
      by_key[r.recipe + "\n" + r.hostname + "\n" + r.resolved_recipe].push_back(&r);
  std::vector<std::vector<const RunRecord*>> out;
  for (auto& [key, series] : by_key) {
    std::stable_sort(series.begin(), series.end(), [](const RunRecord* a, const RunRecord* b) {
      return a->started_utc != b->started_utc ? a->started_utc < b->started_utc : a->id < b->id;
    });
    for (size_t i = series.size(); i-- > 0;)
      if (accepted.count(series[i]->id)) {
        series.erase(series.begin(), series.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    out.push_back(std::move(series));
  }
  return out;
}

struct Split {
  size_t at = 0;  // the first run after the change
  double p = 1;   // Bonferroni-adjusted
};

Split best_split(const std::vector<double>& v) {
  Split best;
  const size_t candidates = v.size() + 1 - 2 * kMinimumSide;
  for (size_t k = kMinimumSide; k + kMinimumSide <= v.size(); ++k) {
    const std::vector<double> before(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k));
    const std::vector<double> after(v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    const double p = std::min(
        1.0, metrics::mann_whitney_u(before, after).p_value * static_cast<double>(candidates));
    if (p < best.p) best = {k, p};
  }
  return best;
}

// "" when the samples do not confirm the change; else how they did.
std::string confirm(const std::vector<const RunRecord*>& series, size_t at,
                    const std::string& metric, const SampleReader& samples, double alpha,
                    double split_p) {
  std::vector<double> before, after;
  for (size_t i = 0; i < series.size(); ++i) {
    const auto s = samples(*series[i], metric);
    (i < at ? before : after).insert((i < at ? before : after).end(), s.begin(), s.end());
  }
  if (before.size() < 2 || after.size() < 2)
    return cat("runs' values alone (no raw samples): p ", short_number(split_p, 3));
  const double p = metrics::mann_whitney_u(before, after).p_value;
  if (p >= alpha) return "";
  return cat("samples: p ", short_number(p, 3), " (", before.size(), " vs ", after.size(), ")");
}

}  // namespace

RegressionReport find_regressions(const std::vector<RunRecord>& runs, const std::string& objectives,
                                  const std::set<int64_t>& accepted, const SampleReader& samples,
                                  double alpha) {
  const std::vector<Objective> metrics = parse_objectives(objectives);
  RegressionReport out;
  const auto all_series = series_of(runs, accepted);
  out.series = all_series.size();
  for (const auto& all : all_series)
    for (const Objective& o : metrics) {
      std::vector<const RunRecord*> series;
      std::vector<double> values;
      for (const RunRecord* r : all)
        if (auto it = r->metrics.find(o.metric); it != r->metrics.end()) {
          series.push_back(r);
          values.push_back(it->second);
        }
      if (values.size() < 2 * kMinimumSide) continue;
      const Split s = best_split(values);
      if (s.p >= alpha) continue;
      const std::vector<double> before(values.begin(),
                                       values.begin() + static_cast<std::ptrdiff_t>(s.at));
      const std::vector<double> after(values.begin() + static_cast<std::ptrdiff_t>(s.at),
                                      values.end());
      Regression g{series[0]->recipe,
                   series[0]->hostname,
                   series[0]->label,
                   o.metric,
                   series[s.at - 1]->id,
                   series[s.at]->id,
                   static_cast<int>(before.size()),
                   static_cast<int>(after.size()),
                   median(before),
                   median(after),
                   s.p,
                   ""};
      const bool worse =
          o.maximize ? g.median_after < g.median_before : g.median_after > g.median_before;
      if (!worse) continue;
      g.confirmed = confirm(series, s.at, o.metric, samples, alpha, s.p);
      if (!g.confirmed.empty()) out.found.push_back(g);
    }
  return out;
}

std::string regressions_table(const RegressionReport& r) {
  std::string out;
  for (const auto& g : r.found)
    out += cat("REGRESSION  ", g.recipe, g.label.empty() ? "" : " [" + g.label + "]", " on ",
               g.hostname, ": ", g.metric, " ", short_number(g.median_before, 4), " -> ",
               short_number(g.median_after, 4), " (medians of ", g.runs_before, " and ",
               g.runs_after, " runs) from run ", g.first_after, " (after run ", g.last_before,
               "); split p ", short_number(g.p_value, 3), "; confirmed by ", g.confirmed, "\n");
  out += cat(r.found.size(), " open regressions in ", r.series,
             " series (history --accept RUN accepts one)\n");
  return out;
}

std::string regressions_markdown(const RegressionReport& r) {
  std::string out =
      "| recipe | host | metric | before | after | from run | p | confirmed by |\n"
      "|---|---|---|---|---|---|---|---|\n";
  for (const auto& g : r.found)
    out += cat("| ", g.recipe, g.label.empty() ? "" : " [" + g.label + "]", " | ", g.hostname,
               " | ", g.metric, " | ", short_number(g.median_before, 4), " | ",
               short_number(g.median_after, 4), " | ", g.first_after, " | ",
               short_number(g.p_value, 3), " | ", g.confirmed, " |\n");
  return out;
}

std::vector<double> recorded_samples(const RunRecord& r, const std::string& metric) {
  std::vector<double> out;
  try {
    const auto results = load_run_results(r.results_dir, "");
    const auto& s = results["metrics"][metric]["samples"];
    if (s.is_array())
      for (const auto& x : s)
        if (x.is_number()) out.push_back(x.get<double>());
  } catch (const Error&) {
  }
  return out;
}

}  // namespace deep500::recipes
