// YAML <-> JSON for recipes: results.json keeps the resolved recipe as JSON,
// and `deep500 reproduce` reads it back as YAML. Scalars that read as
// integers, numbers or true/false become JSON numbers and booleans.
#pragma once

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

namespace deep500::recipes {

nlohmann::json yaml_to_json(const YAML::Node& node);
YAML::Node json_to_yaml(const nlohmann::json& json);

}  // namespace deep500::recipes
