#include "recipes/tasks/recipe_task.h"

#include <chrono>
#include <cmath>

#include "deep/error.h"
#include "deep/text.h"
#include "recipes/format/recipe.h"
#include "recipes/tasks/task_rows.h"

namespace deep500::recipes {

const std::vector<RecipeTask>& recipe_task_table() {
  static const std::vector<RecipeTask> table = {
      training_recipe_task(),           conformance_recipe_task(),    inference_recipe_task(),
      operator_benchmark_recipe_task(), operator_check_recipe_task(), op_matrix_recipe_task(),
  };
  return table;
}

const RecipeTask& recipe_task(const std::string& name) {
  for (const RecipeTask& t : recipe_task_table())
    if (t.name == name) return t;
  throw Error(cat("unknown task '", name, "' (known: ", join(recipe_tasks(), ", "), ")"));
}

std::vector<std::string> recipe_tasks() {
  std::vector<std::string> names;
  for (const RecipeTask& t : recipe_task_table()) names.push_back(t.name);
  return names;
}

int64_t recipe_global_batch(const Recipe& r) {
  const RecipeTask& task = recipe_task(r.task);
  return task.global_batch ? task.global_batch(r) : 0;
}

// The software manifest's settings as NAME=VALUE (network/settings.h).
std::vector<std::string> setting_assignments(const SoftwareManifest& s) {
  std::vector<std::string> out;
  for (const auto& [name, value] : s.settings) out.push_back(name + "=" + value);
  return out;
}

// The benchmark loop's settings (metrics::RunnerSettings).
metrics::RunnerSettings read_runner(Fields& f) {
  metrics::RunnerSettings r;
  r.warmup = static_cast<int>(f.integer("warmup", r.warmup, 0, 1000000));
  r.min_repetitions =
      static_cast<int>(f.integer("min_repetitions", r.min_repetitions, 1, 100000000));
  r.max_repetitions =
      static_cast<int>(f.integer("max_repetitions", r.max_repetitions, 1, 100000000));
  r.min_time_seconds = f.number("min_time", r.min_time_seconds, 0, 86400);
  r.max_time_seconds = f.number("max_time", r.max_time_seconds, 0.001, 86400);
  r.cache = f.text("cache", r.cache);
  f.check("cache", [&] {
    DEEP500_CHECK(r.cache == "hot" || r.cache == "cold", "expected hot or cold, got '", r.cache,
                  "'");
  });
  f.check("max_repetitions", [&] { r.validate(); });
  return r;
}

double geomean(const std::vector<double>& v) {
  double log_sum = 0;
  for (double x : v) log_sum += std::log(x);
  return v.empty() ? 0 : std::exp(log_sum / static_cast<double>(v.size()));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace deep500::recipes
