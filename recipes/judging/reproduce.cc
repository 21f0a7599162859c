#include "recipes/judging/reproduce.h"

#include <cmath>

#include "deep/text.h"
#include "recipes/format/recipe.h"
#include "recipes/format/yaml_json.h"

namespace deep500::recipes {

namespace {

using nlohmann::json;

// Final values of the numeric metrics of a results.json.
std::map<std::string, double> final_values(const json& results) {
  std::map<std::string, double> out;
  const json& metrics = results.at("metrics");
  for (auto it = metrics.begin(); it != metrics.end(); ++it)
    if (it.value().is_object() && it.value().contains("value") &&
        it.value().at("value").is_number())
      out[it.key()] = it.value().at("value").get<double>();
  return out;
}

// "bit for bit", "within the reference log's tolerances" or "".
std::string judge(const std::map<std::string, double>& first,
                  const std::map<std::string, double>& again, const Recipe& r,
                  std::vector<std::string>& differences) {
  bool identical = true;
  for (const auto& [name, value] : first) {
    if (is_timing_metric(name)) continue;
    auto other = again.find(name);
    if (other != again.end() && other->second == value) continue;
    identical = false;
    differences.push_back(cat(name, ": ", short_number(value), " -> ",
                              other == again.end() ? "not measured" : short_number(other->second)));
  }
  if (identical) return "bit for bit";
  if (!r.has_reference || r.reference.metrics.empty()) return "";
  for (const auto& [name, expected] : r.reference.metrics) {
    auto a = first.find(name), b = again.find(name);
    if (a == first.end() || b == again.end() ||
        std::fabs(a->second - b->second) > allowed_deviation(expected))
      return "";
  }
  return "within the reference log's tolerances";
}

}  // namespace

Recipe recorded_recipe(const std::string& ref, const std::string& history_path) {
  const json run = load_run_results(ref, history_path);
  return parse_recipe(json_to_yaml(run.at("resolved_recipe")),
                      cat(run.at("results_file").get<std::string>(), ": resolved_recipe"), {});
}

Reproduction reproduce_run(const std::string& ref, const RunOptions& o, std::ostream& out) {
  const json first = load_run_results(ref, history_path(o.output_dir, o.history));
  const std::string file = first.at("results_file").get<std::string>();
  const Recipe r =
      parse_recipe(json_to_yaml(first.at("resolved_recipe")), cat(file, ": resolved_recipe"), {});
  RunOptions again = o;
  again.recipe = file;
  again.reproduces = file;
  again.label = first.value("label", "");  // e.g. a sweep member's axes
  Reproduction rep;
  rep.run = run_loaded_recipe(r, again, out);
  // A rank other than 0 of a distributed run writes nothing to compare.
  if (rep.run.status == "interrupted" || rep.run.results_dir.empty()) return rep;
  const json second = load_run_results(rep.run.results_dir, "");
  rep.verdict = judge(final_values(first), final_values(second), r, rep.metric_differences);
  rep.setup_differences = setup_differences(first, second);
  return rep;
}

}  // namespace deep500::recipes
