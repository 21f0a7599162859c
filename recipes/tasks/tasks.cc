#include "recipes/tasks/tasks.h"

#include "recipes/format/recipe.h"
#include "recipes/tasks/recipe_task.h"

namespace deep500::recipes {

TaskRun run_task(const Recipe& r, const RunOptions& o, std::ostream& out) {
  return recipe_task(r.task).run(r, o, out);
}

}  // namespace deep500::recipes
