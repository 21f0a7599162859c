// Settings by name, for every front end (the deep500 command line, the
// benchmarks, later recipes and Python): "executor.*" names go to
// ExecutorOptions (executor_options.h), the others to the settings backends
// declare (ops::Registry::add_setting). Results record what ran through
// result_context().
#pragma once

#include <string>
#include <vector>

#include "metrics/context.h"
#include "network/executor.h"

namespace deep500::network {

// Applies every NAME=VALUE entry in order; `options` is null where no
// executor runs (operator benchmarks), and executor.* names are refused
// there. Throws Error naming the entry when it is malformed, unknown
// (listing the known names) or of a bad value.
void apply_settings(const std::vector<std::string>& entries, ExecutorOptions* options);

// The machine context with the settings that ran: the executor's name and
// settings (when given), every backend setting, and the backends' library
// versions.
metrics::Context result_context(const GraphExecutor* executor);

}  // namespace deep500::network
