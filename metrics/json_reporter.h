// JSON forms of the metrics types, for other layers that embed results in
// their own files (recipes' results.json).
#pragma once

#include <nlohmann/json.hpp>

#include "metrics/context.h"
#include "metrics/runner.h"

namespace deep500::metrics {

nlohmann::json to_json(const Context& c);
nlohmann::json to_json(const RunnerSettings& s);
nlohmann::json to_json(const Summary& s);
nlohmann::json to_json(const Result& r);  // includes settings and every sample

}  // namespace deep500::metrics
