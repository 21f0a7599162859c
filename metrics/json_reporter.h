// JSON forms of the metrics types, for other layers that embed results in
// their own files (recipes' results.json).
#pragma once

#include <nlohmann/json.hpp>

#include "metrics/context.h"
#include "metrics/runner.h"

namespace deep500::metrics {

// The version of deep500's JSON result files (op bench, train metrics, infer
// traces, onnx-test rows), written as "format_version" at their top level;
// raised when a field changes meaning or disappears.
inline constexpr int kResultFormatVersion = 1;

// The top of every result file: {"format_version": ..., "context": ...}.
nlohmann::json result_header(const Context& c);

nlohmann::json to_json(const Context& c);
nlohmann::json to_json(const RunnerSettings& s);
nlohmann::json to_json(const Summary& s);
nlohmann::json to_json(const Result& r);  // includes settings and every sample
// What a measurement needs back from to_json(Result) (a worker process's
// results): name, labels, problem, counters, samples, warm-up, time, note,
// device, timer and percents of peak; the summary and rates are computed
// again from the samples, the settings are the caller's. Error naming the
// field that is missing or of the wrong type.
Result result_from_json(const nlohmann::json& j, const RunnerSettings& settings);
nlohmann::json to_json(const DeviceMemoryStats& m);
nlohmann::json to_json(const TransferStats& t);

}  // namespace deep500::metrics
