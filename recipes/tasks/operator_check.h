// `deep500 op check`'s checks of one backend on one problem, as the lines of
// its table: the forward check against the reference (a custom operator,
// which has none: repeatable, finite outputs) and, with `grad`, the
// gradient check. Text, so that a worker process (recipes/tasks/kernel_worker.h)
// can run them and send them back.
#pragma once

#include <string>
#include <vector>

#include "deep/tensor.h"
#include "operators/node.h"

namespace deep500::recipes {

// One line of the table (also its header).
std::string check_row(const std::string& backend, const std::string& check,
                      const std::string& status, const std::string& abs, const std::string& rel,
                      const std::string& worst, const std::string& tail);

// "row\t<table line>" and "tally\t<P|F|S>" lines (one tally per check).
std::string check_backend_rows(const ops::NodeSpec& node, const std::vector<Tensor>& inputs,
                               const std::string& backend, bool grad, bool custom);

// The lines of a check whose kernel crashed (or could not run): one FAILED
// forward row saying `failure`, and its tally.
std::string failed_check_rows(const std::string& backend, const std::string& failure);

}  // namespace deep500::recipes
