#include "recipes/results/measurements_json.h"

#include <limits>

#include "deep/error.h"

namespace deep500::recipes {

nlohmann::json measurements_json(const Measurements& m) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : m.final_values) out[name]["value"] = value;
  for (const auto& [name, values] : m.per_epoch) out[name]["per_epoch"] = values;
  for (const auto& [name, values] : m.samples) out[name]["samples"] = values;
  for (const auto& [name, count] : m.trials) out[name]["trials"] = count;
  return out;
}

namespace {

// null: a value that was not finite (JSON has no NaN).
double number(const nlohmann::json& v, const std::string& metric, const char* key) {
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  DEEP500_CHECK(v.is_number(), "metrics.", metric, ".", key, ": expected a number, got ", v.dump());
  return v.get<double>();
}

std::vector<double> numbers(const nlohmann::json& v, const std::string& metric, const char* key) {
  DEEP500_CHECK(v.is_array(), "metrics.", metric, ".", key, ": expected a list of numbers, got ",
                v.dump());
  std::vector<double> out;
  for (const auto& x : v) out.push_back(number(x, metric, key));
  return out;
}

}  // namespace

Measurements measurements_from_json(const nlohmann::json& metrics) {
  DEEP500_CHECK(metrics.is_object(), "metrics: expected a map of metrics, got ", metrics.dump());
  Measurements m;
  for (const auto& [name, entry] : metrics.items()) {
    DEEP500_CHECK(entry.is_object(), "metrics.", name, ": expected a map, got ", entry.dump());
    if (entry.contains("value")) m.final_values[name] = number(entry["value"], name, "value");
    if (entry.contains("per_epoch"))
      m.per_epoch[name] = numbers(entry["per_epoch"], name, "per_epoch");
    if (entry.contains("samples")) m.samples[name] = numbers(entry["samples"], name, "samples");
    if (entry.contains("trials")) m.trials[name] = number(entry["trials"], name, "trials");
  }
  return m;
}

}  // namespace deep500::recipes
