#include "recipes/judging/reference_band.h"

#include <algorithm>
#include <cmath>

#include "deep/error.h"
#include "deep/text.h"
#include "metrics/statistics.h"
#include "metrics/student_t.h"

namespace deep500::recipes {

namespace {

// The recorded ensembles bracketing `batch` and the weight of the upper one
// (0 when `batch` is recorded itself).
struct Bracket {
  const ReferenceEnsemble* low = nullptr;
  const ReferenceEnsemble* high = nullptr;
  double weight = 0;
};

Bracket bracket(const ReferenceLog& ref, int64_t batch) {
  std::vector<std::string> recorded;
  for (const auto& e : ref.ensembles) recorded.push_back(std::to_string(e.batch_size));
  DEEP500_CHECK(!ref.ensembles.empty(), "the reference log ", ref.header.name,
                " has no seed ensembles (record one with deep500 run --record-reference N)");
  for (size_t i = 0; i < ref.ensembles.size(); ++i) {
    const auto& e = ref.ensembles[i];
    if (e.batch_size == batch) return {&e, &e, 0};
    if (i + 1 < ref.ensembles.size() && e.batch_size < batch &&
        batch < ref.ensembles[i + 1].batch_size) {
      const auto& h = ref.ensembles[i + 1];
      return {&e, &h,
              static_cast<double>(batch - e.batch_size) /
                  static_cast<double>(h.batch_size - e.batch_size)};
    }
  }
  throw Error(cat("the reference log ", ref.header.name, " has no seed ensemble at global batch ",
                  batch, " or around it (recorded: ", join(recorded, ", "), ")"));
}

const std::vector<std::vector<double>>& curves_of(const ReferenceEnsemble& e,
                                                  const std::string& metric,
                                                  const ReferenceLog& ref) {
  auto it = e.curves.find(metric);
  DEEP500_CHECK(it != e.curves.end(), "the reference log ", ref.header.name, " recorded no ",
                metric, " curves at batch ", e.batch_size);
  return it->second;
}

double lerp(double a, double b, double w) {
  return a + (b - a) * w;
}

// Per-epoch mean and sd of `c.members`, cut to the epochs all of them have.
void summarize_columns(ReferenceCurves& c) {
  size_t epochs = c.members.front().size();
  for (const auto& m : c.members) epochs = std::min(epochs, m.size());
  c.mean.clear();
  c.stddev.clear();
  for (auto& m : c.members) m.resize(epochs);
  for (size_t k = 0; k < epochs; ++k) {
    std::vector<double> at;
    for (const auto& m : c.members) at.push_back(m[k]);
    const metrics::Summary at_k = metrics::summarize(std::move(at));
    c.mean.push_back(at_k.mean);
    c.stddev.push_back(at_k.stddev);
  }
}

ReferenceCurves curves_at(const ReferenceEnsemble& e, const std::string& metric,
                          const ReferenceLog& ref) {
  ReferenceCurves c;
  c.members = curves_of(e, metric, ref);
  for (size_t k = 0; k < c.members.size(); ++k)
    for (size_t x = 0; x < c.members[k].size(); ++x)
      DEEP500_CHECK(std::isfinite(c.members[k][x]), "the reference log ", ref.header.name,
                    ": member ", k + 1, " (seed ", e.seeds[k], ") at batch ", e.batch_size,
                    " has a ", metric, " that is not finite at epoch ", x + 1);
  summarize_columns(c);
  return c;
}

// `from`'s members shifted and scaled per epoch to mean `mean` and sd `sd`.
void append_moved(const ReferenceCurves& from, const std::vector<double>& mean,
                  const std::vector<double>& sd, metrics::Curves& to) {
  for (const auto& member : from.members) {
    std::vector<double> moved(mean.size());
    for (size_t e = 0; e < mean.size(); ++e) {
      const double scale = from.stddev[e] > 0 ? sd[e] / from.stddev[e] : 1;
      moved[e] = mean[e] + (member[e] - from.mean[e]) * scale;
    }
    to.push_back(std::move(moved));
  }
}

// The first epoch (1-based) at which `curve` meets c's condition; 0: never.
int64_t first_epoch(const Criterion& c, const std::vector<double>& curve) {
  Measurements m;
  m.per_epoch[c.metric] = curve;
  return first_epoch_meeting(c, m, 0);
}

ReferenceEpochs epochs_at(const ReferenceEnsemble& e, const Criterion& c, const ReferenceLog& ref) {
  const auto& members = curves_of(e, c.metric, ref);
  std::vector<double> epochs;
  for (size_t k = 0; k < members.size(); ++k) {
    const int64_t first = first_epoch(c, members[k]);
    DEEP500_CHECK(first > 0, "the reference log ", ref.header.name, ": member ", k + 1, " (seed ",
                  e.seeds[k], ") at batch ", e.batch_size, " never met ", c.metric, " ", c.op, " ",
                  short_number(c.bound));
    epochs.push_back(static_cast<double>(first));
  }
  const metrics::Summary m = metrics::summarize(std::move(epochs));
  return {m.mean, m.stddev, m.min, m.max, m.n};
}

// The run's value: one run's own, or an ensemble's mean over its members
// (every member must have it); `missing` says why there is none.
struct RunValue {
  double value = 0;
  int64_t runs = 1;
  std::string missing;
};

std::vector<const Measurements*> runs_of(const Measurements& m) {
  std::vector<const Measurements*> runs;
  for (const auto& member : m.members) runs.push_back(&member);
  if (runs.empty()) runs.push_back(&m);
  return runs;
}

RunValue run_epochs_to(const Criterion& c, const Measurements& m) {
  RunValue v;
  const auto runs = runs_of(m);
  v.runs = static_cast<int64_t>(runs.size());
  double sum = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    const int64_t e = first_epoch_meeting(c, *runs[k], 0);
    if (e == 0) {
      v.missing = runs.size() > 1 ? cat("member ", k + 1, " never met it") : "never met it";
      return v;
    }
    sum += static_cast<double>(e);
  }
  v.value = sum / static_cast<double>(runs.size());
  return v;
}

// The run's curve of `metric`, cut to the reference's epochs.
std::vector<double> run_curve(const Measurements& m, const std::string& metric, size_t epochs) {
  auto got = m.per_epoch.find(metric);
  if (got == m.per_epoch.end()) return {};
  return {got->second.begin(), got->second.begin() + std::min(epochs, got->second.size())};
}

// Why the runs' curves cannot be ranked ("" when they can).
std::string unrankable(const metrics::Curves& runs, const std::string& metric) {
  for (size_t k = 0; k < runs.size(); ++k) {
    const std::string who = runs.size() > 1 ? cat(" (member ", k + 1, ")") : std::string();
    if (runs[k].empty()) return cat("no ", metric, " epoch measured", who);
    for (size_t e = 0; e < runs[k].size(); ++e)
      if (!std::isfinite(runs[k][e])) return cat(metric, " is not finite at epoch ", e + 1, who);
  }
  return "";
}

Verdict band_verdict(const Criterion& c, const Measurements& m, const ReferenceCurves& ref) {
  Verdict v{c.text, false, ""};
  metrics::Curves runs;
  for (const auto* r : runs_of(m)) runs.push_back(run_curve(*r, c.metric, ref.mean.size()));
  v.detail = unrankable(runs, c.metric);
  if (!v.detail.empty()) return v;
  const metrics::CurveRankResult t = metrics::curve_rank_test(ref.members, runs);
  v.passed = t.p_value > c.alpha * (1 + 1e-9);
  const size_t e = t.worst_epoch;
  const bool ensemble = runs.size() > 1;
  v.detail = cat("worst at epoch ", e + 1, ": ", ensemble ? "mean " : "",
                 short_number(t.run_mean[e]), " vs ", short_number(ref.mean[e]), " (sd ",
                 short_number(ref.stddev[e]), "); rank test over ", t.epochs, " epochs against ",
                 ref.members.size(), " reference curves",
                 ensemble ? cat(" (the mean of ", runs.size(), " runs)") : std::string(),
                 ": p = ", short_number(t.p_value, 3), t.sampled ? " (sampled)" : "", " at ",
                 short_number(c.alpha * 100), "%");
  return v;
}

Verdict epochs_verdict(const Criterion& c, const Measurements& m, const ReferenceEpochs& ref) {
  Verdict v{c.text, false, ""};
  const RunValue run = run_epochs_to(c, m);
  if (!run.missing.empty()) {
    v.detail = cat(c.metric, " ", c.op, " ", short_number(c.bound), ": ", run.missing);
    return v;
  }
  const std::string what =
      cat("epochs to target ", short_number(run.value), run.runs > 1 ? " (mean)" : "");
  if (c.ensemble_test == "distribution") {
    v.passed = run.value >= ref.min && run.value <= ref.max;
    v.detail = cat(what, ", reference ", short_number(ref.min), "-", short_number(ref.max), " (n ",
                   ref.members, ")");
    return v;
  }
  const double n = static_cast<double>(ref.members);
  const double spread = ref.stddev * std::sqrt(1 / static_cast<double>(run.runs) + 1 / n);
  const double bound = metrics::student_t_quantile(1 - c.alpha, n - 1);
  const double t = spread > 0 ? (run.value - ref.mean) / spread : 0;
  v.passed = spread > 0 ? t >= -bound : run.value >= ref.mean;
  const double p = spread > 0 ? metrics::student_t_cdf(t, n - 1) : (v.passed ? 1 : 0);
  v.detail = cat(what, ", reference mean ", short_number(ref.mean), " (sd ",
                 short_number(ref.stddev), ", n ", ref.members,
                 "); one-sided p = ", short_number(p, 3), " at ", short_number(c.alpha * 100), "%");
  return v;
}

// Error unless one run can fail the rank test against `members` at c.alpha.
void check_rank_power(const Criterion& c, size_t members) {
  const auto n = static_cast<int64_t>(members);
  if (metrics::smallest_rank_p_value(n, 1) <= c.alpha * (1 + 1e-9)) return;
  const auto needed = static_cast<int64_t>(std::ceil(1 / c.alpha - 1 - 1e-9));
  throw Error(cat("the reference has ", n, " members, and its rank test needs at least ", needed,
                  " to fail one run at ", short_number(c.alpha * 100),
                  "% (record them with deep500 run --record-reference ", needed, ", or judge at ",
                  short_number(std::ceil(100000.0 / static_cast<double>(n + 1)) / 1000),
                  "% or more)"));
}

}  // namespace

ReferenceCurves reference_curves(const ReferenceLog& ref, const std::string& metric,
                                 int64_t batch) {
  const Bracket b = bracket(ref, batch);
  const ReferenceCurves low = curves_at(*b.low, metric, ref);
  if (b.low == b.high) return low;
  const ReferenceCurves high = curves_at(*b.high, metric, ref);
  const size_t epochs = std::min(low.mean.size(), high.mean.size());
  std::vector<double> mean(epochs), sd(epochs);
  for (size_t e = 0; e < epochs; ++e) {
    mean[e] = lerp(low.mean[e], high.mean[e], b.weight);
    sd[e] = lerp(low.stddev[e], high.stddev[e], b.weight);
  }
  ReferenceCurves at;
  append_moved(low, mean, sd, at.members);
  append_moved(high, mean, sd, at.members);
  summarize_columns(at);
  return at;
}

ReferenceEpochs reference_epochs_to(const ReferenceLog& ref, const Criterion& c, int64_t batch) {
  const Bracket b = bracket(ref, batch);
  ReferenceEpochs low = epochs_at(*b.low, c, ref);
  if (b.low == b.high) return low;
  const ReferenceEpochs high = epochs_at(*b.high, c, ref);
  return {lerp(low.mean, high.mean, b.weight), lerp(low.stddev, high.stddev, b.weight),
          lerp(low.min, high.min, b.weight), lerp(low.max, high.max, b.weight),
          std::min(low.members, high.members)};
}

void check_reference_criterion(const Criterion& c, const ReferenceLog* ref, int64_t batch) {
  DEEP500_CHECK(ref, "criterion '", c.text, "': the recipe has no reference_log");
  DEEP500_CHECK(batch > 0, "criterion '", c.text,
                "': this task has no batch size to pick a reference ensemble by");
  try {
    if (c.ensemble_test == "band")
      check_rank_power(c, reference_curves(*ref, c.metric, batch).members.size());
    else
      reference_epochs_to(*ref, c, batch);
  } catch (const Error& e) {
    throw Error(cat("criterion '", c.text, "': ", e.what()));
  }
}

nlohmann::json reference_figure(const Criterion& c, const Measurements& m, const ReferenceLog& ref,
                                int64_t batch) {
  nlohmann::json f = {{"criterion", c.text}, {"metric", c.metric}};
  if (c.ensemble_test == "band") {
    const ReferenceCurves curves = reference_curves(ref, c.metric, batch);
    const double t = metrics::curve_deviation_threshold(curves.members, c.alpha);
    std::vector<double> low, high;
    for (size_t e = 0; e < curves.mean.size(); ++e) {
      low.push_back(curves.mean[e] - t * curves.stddev[e]);
      high.push_back(curves.mean[e] + t * curves.stddev[e]);
    }
    nlohmann::json members = nlohmann::json::array();
    for (const auto* r : runs_of(m))
      if (!m.members.empty()) members.push_back(run_curve(*r, c.metric, curves.mean.size()));
    f.update({{"kind", "band"},
              {"mean", curves.mean},
              {"low", low},
              {"high", high},
              {"run", run_curve(m, c.metric, curves.mean.size())},
              {"members", members}});
    return f;
  }
  const Bracket b = bracket(ref, batch);
  std::vector<int64_t> reference, run;
  for (const auto& curve : curves_of(*b.low, c.metric, ref))
    reference.push_back(first_epoch(c, curve));
  for (const auto* r : runs_of(m)) run.push_back(first_epoch_meeting(c, *r, 0));
  f.update({{"kind", "epochs_to"}, {"reference", reference}, {"run", run}});
  return f;
}

Verdict judge_against_ensembles(const Criterion& c, const Measurements& m, const ReferenceLog& ref,
                                int64_t batch) {
  if (c.ensemble_test == "band") return band_verdict(c, m, reference_curves(ref, c.metric, batch));
  return epochs_verdict(c, m, reference_epochs_to(ref, c, batch));
}

}  // namespace deep500::recipes
