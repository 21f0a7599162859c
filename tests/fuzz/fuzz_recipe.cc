// What recipes read from users and from past runs (recipes/format/recipe.h,
// recipes/judging/comparison.h, recipes/judging/scoreboard.h): the first byte picks the
// reader, the rest is the text. Even: a recipe YAML file, read, validated
// and printed resolved; odd: a results.json, loaded as a run, compared with
// itself, its HTML report rendered (`deep500 report`) and its resolved
// recipe read back (what `compare` and `reproduce` do before running
// anything); a multiple of 4 also reads the text as
// --set overrides and --objectives. Any input is a value or an Error.
#include "recipes/format/recipe.h"
#include "recipes/format/yaml_fields.h"
#include "recipes/format/yaml_json.h"
#include "recipes/judging/comparison.h"
#include "recipes/judging/scoreboard.h"
#include "recipes/results/report.h"
#include "tests/fuzz/fuzz_common.h"

using namespace deep500;
using namespace deep500::recipes;

namespace {

void read_recipe(const uint8_t* data, size_t size, bool with_sets) {
  const std::string path = fuzz::scratch_file(data, size, ".yaml");
  std::vector<std::string> sets;
  if (with_sets) sets = {"training.epochs=2", "model.name=m", "criteria=[steps > 1]"};
  (void)resolved_yaml(load_recipe(path, sets));
}

void read_results(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_file(data, size, ".json");
  const ReportRun run = report_run(path, "");
  const RunComparison comparison = compare_runs(run.results, run.results);
  (void)format_comparison(comparison);
  (void)comparison_report_html(run, run, comparison, {run.dir, ""});
  (void)parse_recipe(json_to_yaml(run.results.at("resolved_recipe")), path, {});
}

void read_options(const std::string& text) {
  YAML::Node root(YAML::NodeType::Map);
  Overrides overrides;
  apply_override(root, text, overrides);
  (void)parse_objectives(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  if (size == 0) return 0;
  try {
    if (data[0] % 4 == 0)
      read_options(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  } catch (const Error&) {
  }
  try {
    if (data[0] % 2 == 0)
      read_recipe(data + 1, size - 1, data[0] % 4 == 2);
    else
      read_results(data + 1, size - 1);
  } catch (const Error&) {
  }
  return 0;
}
