#include "recipes/format/yaml_json.h"

#include <string>

#include "deep/text.h"

namespace deep500::recipes {

nlohmann::json yaml_to_json(const YAML::Node& node) {
  if (!node || node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(yaml_to_json(item));
    return out;
  }
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& kv : node) out[kv.first.Scalar()] = yaml_to_json(kv.second);
    return out;
  }
  const std::string& text = node.Scalar();
  int64_t i = 0;
  double d = 0;
  if (node.Tag() != "!") {  // a quoted scalar stays a string
    if (parse_int(text, i)) return i;
    if (parse_float(text, d)) return d;
    if (text == "true" || text == "false") return text == "true";
  }
  return text;
}

YAML::Node json_to_yaml(const nlohmann::json& json) {
  if (json.is_null()) return YAML::Node(YAML::NodeType::Null);
  if (json.is_array()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const auto& item : json) out.push_back(json_to_yaml(item));
    return out;
  }
  if (json.is_object()) {
    YAML::Node out(YAML::NodeType::Map);
    for (const auto& [key, value] : json.items()) out[key] = json_to_yaml(value);
    return out;
  }
  if (json.is_string()) return YAML::Node(json.get<std::string>());
  if (json.is_boolean()) return YAML::Node(json.get<bool>());
  if (json.is_number_integer()) return YAML::Node(json.get<int64_t>());
  return YAML::Node(json.get<double>());
}

}  // namespace deep500::recipes
