#include "recipes/results/ensemble.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <sstream>

#include "deep/error.h"
#include "deep/text.h"
#include "metrics/statistics.h"
#include "metrics/student_t.h"

namespace deep500::recipes {

MetricSpread spread_of(const std::string& metric, const std::vector<double>& values, bool olympic,
                       double confidence) {
  MetricSpread s;
  s.metric = metric;
  s.values = values;
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  if (olympic && order.size() >= 3) {
    s.dropped = {order.front(), order.back()};
    order = std::vector<size_t>(order.begin() + 1, order.end() - 1);
  }
  std::vector<double> used;
  for (size_t i : order) used.push_back(values[i]);
  const metrics::Summary u = metrics::summarize(std::move(used));
  s.n = u.n;
  s.mean = u.mean;
  s.stddev = u.stddev;
  s.min = u.min;
  s.max = u.max;
  s.ci_low = s.ci_high = s.mean;
  if (s.n < 2) return s;
  const double half =
      metrics::student_t_quantile(0.5 + confidence / 2, static_cast<double>(s.n - 1)) * s.stddev /
      std::sqrt(static_cast<double>(s.n));
  s.ci_low = s.mean - half;
  s.ci_high = s.mean + half;
  return s;
}

namespace {

// Final values: the spread of every metric a member measured, over the
// members that measured it.
std::vector<MetricSpread> final_spreads(const std::vector<Measurements>& members, bool olympic,
                                        double confidence) {
  std::map<std::string, std::vector<double>> values;
  for (const auto& m : members)
    for (const auto& [name, v] : m.final_values) values[name].push_back(v);
  std::vector<MetricSpread> out;
  for (const auto& [name, v] : values) out.push_back(spread_of(name, v, olympic, confidence));
  return out;
}

// Per-epoch curves: epoch e's mean over the members that measured it.
std::map<std::string, std::vector<double>> mean_curves(const std::vector<Measurements>& members) {
  std::map<std::string, std::vector<double>> sum, count;
  for (const auto& m : members)
    for (const auto& [name, curve] : m.per_epoch) {
      auto& s = sum[name];
      auto& c = count[name];
      if (s.size() < curve.size()) s.resize(curve.size(), 0), c.resize(curve.size(), 0);
      for (size_t e = 0; e < curve.size(); ++e) s[e] += curve[e], c[e] += 1;
    }
  for (auto& [name, s] : sum)
    for (size_t e = 0; e < s.size(); ++e) s[e] /= count[name][e];
  return sum;
}

TargetReach reach_of(const Criterion& c, const std::vector<Measurements>& members, bool olympic,
                     double confidence) {
  TargetReach t;
  t.criterion = c.text;
  std::vector<double> epochs, seconds;
  for (const auto& m : members) {
    const int64_t e = first_epoch_meeting(c, m, 0);
    t.epochs.push_back(e);
    double s = -1;
    auto elapsed = m.per_epoch.find("elapsed_seconds");
    if (e > 0 && elapsed != m.per_epoch.end() && elapsed->second.size() >= static_cast<size_t>(e))
      s = elapsed->second[static_cast<size_t>(e - 1)];
    t.seconds.push_back(s);
    if (e > 0) {
      ++t.reached;
      epochs.push_back(static_cast<double>(e));
      if (s >= 0) seconds.push_back(s);
    }
  }
  if (!epochs.empty()) t.epochs_spread = spread_of("epochs_to_target", epochs, olympic, confidence);
  if (!seconds.empty())
    t.seconds_spread = spread_of("seconds_to_target", seconds, olympic, confidence);
  return t;
}

}  // namespace

EnsembleSummary summarize_ensemble(const std::vector<Measurements>& members,
                                   const std::vector<Criterion>& criteria, bool olympic,
                                   double confidence) {
  DEEP500_CHECK(!members.empty(), "an ensemble needs at least one member");
  EnsembleSummary s;
  s.confidence = confidence;
  s.olympic = olympic;
  s.metrics = final_spreads(members, olympic, confidence);
  for (const auto& m : s.metrics) {
    if (m.n == 0) continue;
    s.means.final_values[m.metric] = m.mean;
    auto& used = s.means.samples[m.metric];  // what `deep500 compare` tests
    for (size_t k = 0; k < m.values.size(); ++k)
      if (std::find(m.dropped.begin(), m.dropped.end(), k) == m.dropped.end())
        used.push_back(m.values[k]);
  }
  s.means.per_epoch = mean_curves(members);
  s.means.members = members;
  for (const auto& c : criteria)
    if (c.by_epoch > 0) s.targets.push_back(reach_of(c, members, olympic, confidence));
  return s;
}

std::string ensemble_csv(const std::vector<const Measurements*>& members) {
  std::set<std::string> names;
  size_t epochs = 0;
  for (const auto* m : members)
    for (const auto& [name, curve] : m->per_epoch)
      names.insert(name), epochs = std::max(epochs, curve.size());
  std::ostringstream csv;
  csv << "member,epoch";
  for (const auto& name : names) csv << "," << name;
  csv << "\n";
  for (size_t k = 0; k < members.size(); ++k)
    for (size_t e = 0; e < epochs; ++e) {
      csv << k + 1 << "," << e + 1;
      for (const auto& name : names) {
        csv << ",";
        auto c = members[k]->per_epoch.find(name);
        if (c != members[k]->per_epoch.end() && e < c->second.size())
          csv << short_number(c->second[e], 10);
      }
      csv << "\n";
    }
  return csv.str();
}

std::string ensemble_line(const EnsembleSummary& s, const std::vector<Criterion>& criteria) {
  std::set<std::string> named;
  for (const auto& c : criteria) named.insert(c.metric);
  std::vector<std::string> parts;
  for (const auto& m : s.metrics)
    if (named.count(m.metric))
      parts.push_back(cat(m.metric, " ", short_number(m.mean, 4), " [", short_number(m.ci_low, 4),
                          ", ", short_number(m.ci_high, 4), "] (", s.confidence * 100, "%, n ", m.n,
                          ")"));
  for (const auto& t : s.targets)
    parts.push_back(cat("'", t.criterion, "' reached by ", t.reached, " of ", t.epochs.size()));
  return join(parts, "; ");
}

nlohmann::json to_json(const MetricSpread& s) {
  return {{"values", s.values}, {"dropped", s.dropped}, {"n", s.n},
          {"mean", s.mean},     {"stddev", s.stddev},   {"min", s.min},
          {"max", s.max},       {"ci_low", s.ci_low},   {"ci_high", s.ci_high}};
}

nlohmann::json to_json(const EnsembleSummary& s) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& m : s.metrics) metrics[m.metric] = to_json(m);
  nlohmann::json targets = nlohmann::json::array();
  for (const auto& t : s.targets) {
    nlohmann::json j = {{"criterion", t.criterion},
                        {"epochs", t.epochs},
                        {"seconds", t.seconds},
                        {"reached", t.reached}};
    if (t.epochs_spread) j["epochs_to_target"] = to_json(*t.epochs_spread);
    if (t.seconds_spread) j["seconds_to_target"] = to_json(*t.seconds_spread);
    targets.push_back(j);
  }
  return {{"confidence", s.confidence},
          {"olympic", s.olympic},
          {"metrics", metrics},
          {"targets", targets}};
}

}  // namespace deep500::recipes
