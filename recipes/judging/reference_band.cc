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

ReferenceCurve curve_at(const ReferenceEnsemble& e, const std::string& metric,
                        const ReferenceLog& ref) {
  const auto& members = curves_of(e, metric, ref);
  size_t epochs = members.front().size();
  for (const auto& m : members) epochs = std::min(epochs, m.size());
  ReferenceCurve c;
  c.members = static_cast<int64_t>(members.size());
  for (size_t k = 0; k < epochs; ++k) {
    std::vector<double> at;
    for (const auto& m : members) at.push_back(m[k]);
    const metrics::Summary at_k = metrics::summarize(std::move(at));
    c.mean.push_back(at_k.mean);
    c.stddev.push_back(at_k.stddev);
  }
  return c;
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

// The band's t multiplier: Bonferroni over `epochs` two-sided tests.
double band_t(const Criterion& c, size_t epochs, const ReferenceCurve& ref) {
  return metrics::student_t_quantile(1 - c.alpha / (2 * static_cast<double>(epochs)),
                                     static_cast<double>(ref.members - 1));
}

// The runs judged: an ensemble's members, or the one run.
double run_count(const Measurements& m) {
  return static_cast<double>(std::max<size_t>(1, m.members.size()));
}

// sqrt(1/m + 1/n): the band's standard deviations per reference sd, for the
// mean of m runs against n reference members.
double band_scale(const Measurements& m, const ReferenceCurve& ref) {
  return std::sqrt(1 / run_count(m) + 1 / static_cast<double>(ref.members));
}

// The run's curve of `metric`, cut to the reference's epochs.
std::vector<double> run_curve(const Measurements& m, const std::string& metric, size_t epochs) {
  auto got = m.per_epoch.find(metric);
  if (got == m.per_epoch.end()) return {};
  return {got->second.begin(), got->second.begin() + std::min(epochs, got->second.size())};
}

Verdict band_verdict(const Criterion& c, const Measurements& m, const ReferenceCurve& ref) {
  Verdict v{c.text, false, ""};
  const std::vector<double> run = run_curve(m, c.metric, ref.mean.size());
  const size_t epochs = run.size();
  if (epochs == 0) {
    v.detail = cat("no ", c.metric, " epoch measured");
    return v;
  }
  const double dof = static_cast<double>(ref.members - 1);
  const double scale = band_scale(m, ref);
  const double t_bound = band_t(c, epochs, ref);
  double worst_p = 1;
  size_t worst = 0;
  bool inside = true;
  for (size_t e = 0; e < epochs; ++e) {
    const double x = run[e], spread = ref.stddev[e] * scale;
    const double diff = std::fabs(x - ref.mean[e]);
    double p = std::isfinite(x) && diff == 0 ? 1 : 0;
    if (std::isfinite(x) && spread > 0) p = 2 * (1 - metrics::student_t_cdf(diff / spread, dof));
    if (!std::isfinite(x) || (spread > 0 ? diff > t_bound * spread : diff > 0)) inside = false;
    if (p < worst_p || e == 0) worst_p = p, worst = e;
  }
  const double p_value = std::min(1.0, worst_p * static_cast<double>(epochs));
  v.passed = inside;
  const double half = t_bound * ref.stddev[worst] * scale;
  const double runs = run_count(m);
  v.detail = cat("worst at epoch ", worst + 1, ": ", short_number(run[worst]), " vs ",
                 short_number(ref.mean[worst]), " +- ", short_number(half),
                 "; p = ", short_number(p_value, 3), " over ", epochs, " epochs (n ", ref.members,
                 runs > 1 ? cat(", mean of ", runs, " runs") : std::string(), ", at ",
                 short_number(c.alpha * 100), "%)");
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

}  // namespace

ReferenceCurve reference_curve(const ReferenceLog& ref, const std::string& metric, int64_t batch) {
  const Bracket b = bracket(ref, batch);
  ReferenceCurve low = curve_at(*b.low, metric, ref);
  if (b.low == b.high) return low;
  const ReferenceCurve high = curve_at(*b.high, metric, ref);
  const size_t epochs = std::min(low.mean.size(), high.mean.size());
  low.mean.resize(epochs);
  low.stddev.resize(epochs);
  for (size_t e = 0; e < epochs; ++e) {
    low.mean[e] = lerp(low.mean[e], high.mean[e], b.weight);
    low.stddev[e] = lerp(low.stddev[e], high.stddev[e], b.weight);
  }
  low.members = std::min(low.members, high.members);
  return low;
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
      reference_curve(*ref, c.metric, batch);
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
    const ReferenceCurve curve = reference_curve(ref, c.metric, batch);
    const std::vector<double> run = run_curve(m, c.metric, curve.mean.size());
    const double t = band_t(c, std::max<size_t>(1, run.size()), curve) * band_scale(m, curve);
    std::vector<double> low, high;
    for (size_t e = 0; e < curve.mean.size(); ++e) {
      const double half = t * curve.stddev[e];
      low.push_back(curve.mean[e] - half);
      high.push_back(curve.mean[e] + half);
    }
    f.update({{"kind", "band"}, {"mean", curve.mean}, {"low", low}, {"high", high}, {"run", run}});
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
  if (c.ensemble_test == "band") return band_verdict(c, m, reference_curve(ref, c.metric, batch));
  return epochs_verdict(c, m, reference_epochs_to(ref, c, batch));
}

}  // namespace deep500::recipes
