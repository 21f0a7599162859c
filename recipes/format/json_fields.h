// Reading fields of JSON that deep500 wrote but a user may have edited
// (results.json): lenient accessors that never throw, for readers that
// show what is there and skip what is not.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace deep500::recipes {

// j[key] when j is an object holding it, else null.
inline const nlohmann::json& field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  return j.is_object() && j.contains(key) ? j.at(key) : kNull;
}

// j[key] when it is a string, else "".
inline std::string field_text(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = field(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}

// The numbers of a JSON array (other entries skipped); empty when it is not one.
inline std::vector<double> json_numbers(const nlohmann::json& j) {
  std::vector<double> out;
  if (!j.is_array()) return out;
  for (const auto& v : j)
    if (v.is_number()) out.push_back(v.get<double>());
  return out;
}

}  // namespace deep500::recipes
