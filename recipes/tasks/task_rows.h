// What the rows of recipe_task_table() share, and the function of each
// task's file that gives its row (recipes/tasks/recipe_task.h). Only the task
// files and the table include this.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "metrics/runner.h"
#include "recipes/format/manifests.h"
#include "recipes/format/yaml_fields.h"
#include "recipes/tasks/operator_task.h"
#include "recipes/tasks/recipe_task.h"

namespace deep500::recipes {

RecipeTask training_recipe_task();            // recipes/tasks/training_recipe.cc
RecipeTask conformance_recipe_task();         // recipes/tasks/conformance_recipe.cc
RecipeTask inference_recipe_task();           // recipes/tasks/inference_recipe.cc
RecipeTask operator_benchmark_recipe_task();  // recipes/tasks/operator_benchmark_recipe.cc
RecipeTask op_matrix_recipe_task();           // recipes/tasks/op_matrix_recipe.cc
RecipeTask operator_check_recipe_task();      // recipes/tasks/operator_check_recipe.cc

// An operator's entry of a task section: op, domain, opset, attrs and its
// problems (shapes or inputs, dtype, batch), each node checked against the
// operator's schema (recipes/tasks/operator_benchmark_recipe.cc).
void read_operator_problems(Fields& g, OperatorSpec& op, std::vector<Problem>& problems);
// A section's `backends` (checked: registered names, or [all]) and `seed`.
std::vector<std::string> read_backends(Fields& f);
uint64_t read_seed(Fields& f, uint64_t fallback);

// The software manifest's settings as NAME=VALUE (network/settings.h).
std::vector<std::string> setting_assignments(const SoftwareManifest& s);
// The benchmark loop's settings (metrics::RunnerSettings) of a task section.
metrics::RunnerSettings read_runner(Fields& f);
// The geometric mean (0 for none).
double geomean(const std::vector<double>& v);
// Seconds since `start`.
double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace deep500::recipes
