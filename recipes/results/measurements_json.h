// results.json's `metrics`: what a run measured, and back (a member run in a
// process of its own is read back from its results.json).
#pragma once

#include <nlohmann/json.hpp>

#include "recipes/judging/criteria.h"

namespace deep500::recipes {

// {NAME: {value, per_epoch, samples, trials}} (each key where measured).
nlohmann::json measurements_json(const Measurements& m);

// The inverse of measurements_json (members are not part of it); Error
// naming the metric when a value is not a number or a list of numbers.
Measurements measurements_from_json(const nlohmann::json& metrics);

}  // namespace deep500::recipes
