#include "recipes/results/reference_recording.h"

#include <algorithm>
#include <cmath>

#include <yaml-cpp/yaml.h>

#include "deep/error.h"
#include "deep/text.h"
#include "metrics/statistics.h"
#include "recipes/tasks/recipe_task.h"

namespace deep500::recipes {

namespace {

// Per-epoch metrics worth a band: not the timings, which vary with the machine.
std::vector<std::string> curve_metrics(const std::vector<RecordedMember>& members) {
  std::vector<std::string> out;
  for (const auto& [name, curve] : members.front().measurements->per_epoch)
    if (!is_timing_metric(name) &&
        std::all_of(members.begin(), members.end(), [&](const RecordedMember& m) {
          auto c = m.measurements->per_epoch.find(name);
          return c != m.measurements->per_epoch.end() && !c->second.empty();
        }))
      out.push_back(name);
  return out;
}

ReferenceEnsemble ensemble_of(const Recipe& r, const std::vector<RecordedMember>& members) {
  ReferenceEnsemble e;
  e.batch_size = recipe_global_batch(r);
  DEEP500_CHECK(e.batch_size > 0, r.header.name,
                ": --record-reference needs a task with a batch size (training)");
  for (const auto& m : members) e.seeds.push_back(m.seed);
  for (const auto& name : curve_metrics(members))
    for (const auto& m : members) e.curves[name].push_back(m.measurements->per_epoch.at(name));
  return e;
}

std::map<std::string, ExpectedMetric> means_with_tolerances(
    const std::vector<RecordedMember>& members) {
  std::map<std::string, std::vector<double>> values;
  for (const auto& m : members)
    for (const auto& [name, v] : m.measurements->final_values)
      if (!is_timing_metric(name) && std::isfinite(v)) values[name].push_back(v);
  std::map<std::string, ExpectedMetric> out;
  for (const auto& [name, v] : values) {
    if (v.size() != members.size()) continue;
    const metrics::Summary spread = metrics::summarize(v);
    out[name] = {spread.mean, 3 * spread.stddev, false};
  }
  return out;
}

void emit_numbers(YAML::Emitter& out, const std::vector<double>& v) {
  out << YAML::Flow << YAML::BeginSeq;
  for (double x : v) out << short_number(x, 10);
  out << YAML::EndSeq;
}

void emit_ensemble(YAML::Emitter& out, const ReferenceEnsemble& e) {
  out << YAML::BeginMap << YAML::Key << "batch_size" << YAML::Value << e.batch_size;
  out << YAML::Key << "seeds" << YAML::Value << YAML::Flow << e.seeds;
  out << YAML::Key << "curves" << YAML::Value << YAML::BeginMap;
  for (const auto& [metric, members] : e.curves) {
    out << YAML::Key << metric << YAML::Value << YAML::BeginSeq;
    for (const auto& curve : members) emit_numbers(out, curve);
    out << YAML::EndSeq;
  }
  out << YAML::EndMap << YAML::EndMap;
}

std::string name_version(const ManifestHeader& h) {
  return cat(h.name, " ", h.version);
}

}  // namespace

std::string recorded_reference_yaml(const Recipe& r, const std::vector<RecordedMember>& members,
                                    const std::string& note) {
  DEEP500_CHECK(members.size() >= 2, "--record-reference needs at least 2 members");
  const ReferenceEnsemble recorded = ensemble_of(r, members);
  std::vector<ReferenceEnsemble> ensembles;
  if (r.has_reference)
    for (const auto& e : r.reference.ensembles)
      if (e.batch_size != recorded.batch_size) ensembles.push_back(e);
  ensembles.push_back(recorded);
  std::sort(ensembles.begin(), ensembles.end(),
            [](const auto& a, const auto& b) { return a.batch_size < b.batch_size; });
  const auto metrics = r.has_reference && !r.reference.metrics.empty()
                           ? r.reference.metrics
                           : means_with_tolerances(members);

  YAML::Emitter out;
  out << YAML::Comment(note) << YAML::Newline;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << r.header.name + "-reference";
  out << YAML::Key << "version" << YAML::Value << r.header.version;
  out << YAML::Key << "description" << YAML::Value
      << cat("what ", name_version(r.header), " measured as seed ensembles");
  out << YAML::Key << "produced_with" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "recipe" << YAML::Value << name_version(r.header);
  out << YAML::Key << "hardware" << YAML::Value << name_version(r.hardware.header);
  out << YAML::Key << "software" << YAML::Value << name_version(r.software.header);
  if (!r.dataset.header.name.empty())
    out << YAML::Key << "dataset" << YAML::Value << name_version(r.dataset.header);
  if (!r.model.header.name.empty())
    out << YAML::Key << "model" << YAML::Value << name_version(r.model.header);
  out << YAML::EndMap;
  out << YAML::Key << "metrics" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, e] : metrics)
    out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "value"
        << YAML::Value << short_number(e.value, 6) << YAML::Key << "tolerance" << YAML::Value
        << (e.relative ? cat(short_number(e.tolerance), "%") : short_number(e.tolerance, 3))
        << YAML::EndMap;
  out << YAML::EndMap;
  out << YAML::Key << "ensembles" << YAML::Value << YAML::BeginSeq;
  for (const auto& e : ensembles) emit_ensemble(out, e);
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace deep500::recipes
