#include "recipes/format/recipe.h"

#include <algorithm>
#include <filesystem>

#include "deep/error.h"
#include "deep/text.h"
#include "recipes/tasks/recipe_task.h"

namespace deep500::recipes {

namespace {

const char* kManifests[] = {"hardware", "software", "dataset", "model", "reference_log"};

// Replaces each manifest given as a path by its file's content.
void inline_manifests(YAML::Node root, const std::string& recipe_path,
                      std::map<std::string, std::string>& files) {
  namespace fs = std::filesystem;
  for (const char* key : kManifests) {
    YAML::Node n = root[key];
    if (!n || !n.IsScalar()) continue;
    fs::path p = n.Scalar();
    if (p.is_relative()) p = fs::absolute(recipe_path).parent_path() / p;
    const std::string file = p.lexically_normal().string();
    std::error_code ec;
    if (!fs::exists(file, ec)) {
      const YAML::Mark m = n.Mark();
      throw Error(cat(recipe_path, ":", m.line + 1, ":", m.column + 1, ": ", key,
                      ": manifest file not found: ", file));
    }
    root[key] = load_yaml_file(file);
    files[key] = file;
  }
}

// A manifest section: absent ones (hardware, software) require nothing.
Fields manifest_fields(Fields& top, const std::string& key, const Recipe& r) {
  auto file = r.manifest_files.find(key);
  Fields in_recipe = top.section(key);
  if (file == r.manifest_files.end()) return in_recipe;
  return Fields(top.node(key), file->second, key, r.resolved[key], &r.overrides);
}

YAML::Node default_header(const std::string& name) {
  YAML::Node n;
  n["name"] = name;
  n["version"] = "1.0.0";
  n["description"] = "no constraints";
  return n;
}

}  // namespace

std::vector<std::string> recipe_metrics(const Recipe& r) {
  return recipe_task(r.task).metrics(r);
}

int recipe_ranks(const Recipe& r) {
  return recipe_task(r.task).ranks(r);
}

bool is_timing_metric(const std::string& name) {
  auto ends_with = [&](const std::string& tail) {
    return name.size() >= tail.size() &&
           name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return name == "seconds" || name == "time_to_accuracy" || name == "peak_gflops" ||
         name.rfind("latency.", 0) == 0 || ends_with("samples_per_second") || ends_with("gflops") ||
         ends_with("percent_of_peak") || ends_with("_seconds") || name == "max_clock_gap" ||
         name == "mean_update_staleness";
}

namespace {

// ensemble.processes: `auto` (0) or a count of processes.
int64_t read_processes(Fields& f) {
  const std::string text = f.text("processes", "1");
  int64_t n = 0;
  if (text == "auto") return n;
  if (!parse_int(text, n) || n < 1 || n > 1024)
    f.fail("processes",
           cat("expected auto or a count of processes from 1 to 1024, got '", text, "'"));
  f.resolve("processes", YAML::Node(n));
  return n;
}

// ensemble: {repeat, olympic, confidence, processes}; members differ in training.seed.
EnsembleOptions read_ensemble(Fields& top, const Recipe& r) {
  if (!top.has("ensemble")) return {};
  if (!recipe_task(r.task).seed)
    top.fail("ensemble",
             cat("task ", r.task, " has no seed for an ensemble's members to differ in"));
  Fields f = top.section("ensemble");
  EnsembleOptions e;
  e.repeat = f.integer("repeat", e.repeat, 1, 1000);
  e.olympic = f.flag("olympic", e.olympic);
  if (e.olympic && e.repeat < 3)
    f.fail("olympic", "drops the best and the worst member, so it needs repeat >= 3");
  e.confidence = f.number("confidence", e.confidence, 0.5, 0.999);
  e.processes = read_processes(f);
  f.finish();
  return e;
}

}  // namespace

Recipe load_recipe(const std::string& path, const std::vector<std::string>& sets) {
  return parse_recipe(load_yaml_file(path), path, sets);
}

Recipe parse_recipe(YAML::Node root, const std::string& path,
                    const std::vector<std::string>& sets) {
  Recipe r;
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  DEEP500_CHECK(root.IsMap(), path, ": expected a recipe (a map of keys), got something else");
  inline_manifests(root, path, r.manifest_files);
  for (const char* key : {"hardware", "software"})
    if (!root[key]) root[key] = default_header(cat("any ", key));
  for (const auto& s : sets) apply_override(root, s, r.overrides);

  r.resolved = YAML::Node(YAML::NodeType::Map);
  Fields top(root, path, "", r.resolved, &r.overrides);
  r.header = read_header(top);
  r.hardware = read_hardware(manifest_fields(top, "hardware", r));
  r.software = read_software(manifest_fields(top, "software", r));
  r.task = top.required_text("task");
  const RecipeTask* task = nullptr;
  top.check("task", [&] { task = &recipe_task(r.task); });
  for (const std::string& key : task->required_manifests)
    if (!top.has(key)) top.fail(key, "required, missing");
  if (top.has("dataset")) r.dataset = read_dataset(manifest_fields(top, "dataset", r));
  if (top.has("model")) r.model = read_model(manifest_fields(top, "model", r));
  r.has_reference = top.has("reference_log");
  if (r.has_reference)
    r.reference = read_reference_log(manifest_fields(top, "reference_log", r));
  else
    top.node("reference_log");
  task->read(top, r);
  r.ensemble = read_ensemble(top, r);
  r.sweep = read_sweep(top);
  r.launcher = read_launcher(top);

  const auto known = recipe_metrics(r);
  for (const auto& text : top.texts("criteria")) {
    top.check("criteria", [&] {
      Criterion c = parse_criterion(text);
      check_criterion(c, known, r.has_reference ? &r.reference : nullptr, recipe_global_batch(r));
      r.criteria.push_back(c);
    });
  }
  top.finish();
  return r;
}

std::string resolved_yaml(const Recipe& r) {
  YAML::Emitter out;
  out << r.resolved;
  return std::string(out.c_str()) + "\n";
}

}  // namespace deep500::recipes
