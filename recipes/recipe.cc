#include "recipes/recipe.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "deep/error.h"
#include "deep/text.h"
#include "distributed/distributed_sampler.h"
#include "distributed/schemes.h"
#include "operators/registry.h"
#include "training/optimizer_registry.h"
#include "training/schedules.h"
#include "training/transforms.h"

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

// training.distributed: data-parallel training on `ranks` MPI processes.
void read_distributed(Fields f, TrainingTask& t) {
  t.ranks = static_cast<int>(f.integer("ranks", 2, 1, 4096));
  t.scheme = f.text("scheme", t.scheme);
  f.check("scheme", [&] { distributed::parse_scheme(t.scheme, "scheme"); });
  t.shard = f.text("shard", t.shard);
  f.check("shard", [&] { distributed::parse_shard_mode(t.shard, "shard"); });
  t.comm_timeout = f.number("timeout", t.comm_timeout, 0.001, 86400);
  f.finish();
}

TrainingTask read_training(Fields f) {
  TrainingTask t;
  t.optimizer = f.text("optimizer", t.optimizer);
  t.hyper = f.number_map("hyper");
  // The name first, on the key that gave it (the file or a --set); then the
  // hyper-parameters it takes.
  f.check("optimizer", [&] { training::make_optimizer(t.optimizer); });
  f.check("hyper", [&] { training::make_optimizer(t.optimizer, t.hyper); });
  t.epochs = f.integer("epochs", t.epochs, 1, 1000000);
  t.batch_size = f.integer("batch_size", t.batch_size, 1, 1 << 24);
  t.lr_schedule = f.text("lr_schedule", "");
  f.check("lr_schedule",
          [&] { training::parse_lr_schedule(t.lr_schedule, 0.1, t.epochs, "lr_schedule"); });
  t.augment = f.texts("augment");
  f.check("augment", [&] { training::parse_transforms(t.augment, "augment"); });
  t.seed = static_cast<uint64_t>(f.integer("seed", 1, 0, std::numeric_limits<int64_t>::max()));
  t.prefetch_threads = static_cast<int>(f.integer("prefetch_threads", 1, 0, 64));
  t.subset = f.integer("subset", 0, 0, std::numeric_limits<int64_t>::max());
  t.test_subset = f.integer("test_subset", 0, 0, std::numeric_limits<int64_t>::max());
  t.time_limit = f.number("time_limit", 0, 0, 1e9);
  t.continue_on_non_finite = f.flag("continue_on_non_finite", false);
  if (f.has("distributed")) read_distributed(f.section("distributed"), t);
  f.finish();
  return t;
}

ConformanceTask read_conformance(Fields f) {
  ConformanceTask t;
  YAML::Node resolved_suites(YAML::NodeType::Sequence);
  for (const auto& suite : f.texts("suites")) {
    t.suites.push_back(f.absolute(suite));
    std::error_code ec;
    if (!std::filesystem::is_directory(t.suites.back(), ec))
      f.fail("suites", cat("folder not found: ", t.suites.back()));
    resolved_suites.push_back(t.suites.back());
  }
  if (t.suites.empty()) f.fail("suites", "expected at least one folder of ONNX test cases");
  f.resolve("suites", resolved_suites);
  t.filter = f.text("filter", "");
  t.timeout_seconds = f.number("timeout", t.timeout_seconds, 0.001, 86400);
  t.isolate = f.flag("isolate", t.isolate);
  f.finish();
  return t;
}

// NAME: FILE.npy entries as NAME=ABSOLUTE_PATH (files relative to the recipe).
std::vector<std::string> npy_files(Fields& f, const std::string& key) {
  std::vector<std::string> out;
  YAML::Node resolved(YAML::NodeType::Map);
  for (const auto& [name, file] : f.text_map(key)) {
    const std::string path = f.absolute(file);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      f.fail(key, cat(name, ": file not found: ", path));
    out.push_back(name + "=" + path);
    resolved[name] = path;
  }
  f.resolve(key, resolved);
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

OperatorBenchmark read_benchmarked_operator(Fields& g, const OperatorBenchmark& common) {
  OperatorBenchmark b = common;
  b.op.op_type = g.required_text("op");
  b.op.domain = g.text("domain", "");
  b.op.opset = static_cast<int>(g.integer("opset", b.op.opset, 1, 1000));
  b.op.attrs = g.texts("attrs");
  g.check("attrs", [&] { find_definition(b.op); });
  const std::string shapes = g.absolute(g.text("shapes", ""));
  if (!shapes.empty()) g.resolve("shapes", YAML::Node(shapes));
  const auto inputs = g.texts("inputs");
  const std::string dtype = g.text("dtype", "float32");
  std::vector<int64_t> batch;
  for (const auto& text : g.texts("batch")) {
    int64_t n = 0;
    if (!parse_int(text, n) || n < 1 || n > (int64_t{1} << 31))
      g.fail("batch", cat("expected batch sizes >= 1, got '", text, "'"));
    batch.push_back(n);
  }
  if (shapes.empty() && inputs.empty())
    g.fail("op", "give shapes (a benchdnn-style problem file) or inputs (NAME:dtype:shape)");
  g.check(shapes.empty() ? "inputs" : "shapes",
          [&] { b.problems = make_problems(b.op.op_type, inputs, shapes, dtype, batch); });
  for (const auto& p : b.problems)
    g.check(shapes.empty() ? "inputs" : "shapes",
            [&] { make_node(b.op, find_definition(b.op), p); });
  g.finish();
  return b;
}

OperatorBenchmarkSuite read_operator_benchmark(Fields f) {
  OperatorBenchmarkSuite suite;
  OperatorBenchmark common;
  common.backends = f.texts("backends");
  f.check("backends", [&] {
    if (!(common.backends.size() == 1 && common.backends[0] == "all"))
      ops::Registry::global().check_backend_names(common.backends, "backends");
  });
  common.backward = f.flag("backward", false);
  common.seed = static_cast<uint64_t>(
      f.integer("seed", static_cast<int64_t>(common.seed), 0, std::numeric_limits<int64_t>::max()));
  common.isolate = f.flag("isolate", common.isolate);
  common.include_transfers = f.flag("include_transfers", common.include_transfers);
  common.runner = read_runner(f);
  suite.measure_peak = f.flag("peak", suite.measure_peak);
  f.for_each_map("operators", "{op, shapes or inputs, attrs, dtype, batch}", [&](Fields& g) {
    suite.operators.push_back(read_benchmarked_operator(g, common));
  });
  if (suite.operators.empty()) f.fail("operators", "expected at least one operator to measure");
  f.finish();
  return suite;
}

MatrixOptions read_op_matrix(Fields f) {
  MatrixOptions m;
  m.ops = f.texts("ops");
  m.shapes_path = f.absolute(f.text("shapes", ""));
  m.dtype = f.text("dtype", m.dtype);
  m.backends = f.texts("backends");
  f.check("backends", [&] { matrix_backends(m); });
  m.backward = f.flag("backward", m.backward);
  m.speed = f.flag("speed", m.speed);
  m.measure_peak = f.flag("peak", m.measure_peak);
  m.isolate = f.flag("isolate", m.isolate);
  m.seed = static_cast<uint64_t>(
      f.integer("seed", static_cast<int64_t>(m.seed), 0, std::numeric_limits<int64_t>::max()));
  m.runner = read_runner(f);
  f.check(m.shapes_path.empty() ? "ops" : "shapes", [&] { count_matrix_cases(m); });
  f.finish();
  return m;
}

InferenceTask read_inference(Fields f) {
  InferenceTask t;
  t.scenarios = f.has("scenarios") ? f.texts("scenarios") : inference_scenarios();
  const auto known = inference_scenarios();
  for (const auto& s : t.scenarios)
    if (std::find(known.begin(), known.end(), s) == known.end())
      f.fail("scenarios", cat("unknown scenario '", s, "' (known: ", join(known, ", "), ")"));
  YAML::Node resolved_scenarios(YAML::NodeType::Sequence);
  for (const auto& s : t.scenarios) resolved_scenarios.push_back(s);
  f.resolve("scenarios", resolved_scenarios);
  t.inputs = npy_files(f, "inputs");
  if (t.inputs.empty()) f.fail("inputs", "expected NAME: FILE.npy for the model's inputs");
  t.expected = npy_files(f, "expected_outputs");
  t.tolerance.rtol = f.number("rtol", t.tolerance.rtol, 0, 1);
  t.tolerance.atol = f.number("atol", t.tolerance.atol, 0, 1e30);
  t.runner = read_runner(f);
  f.finish();
  return t;
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

std::vector<std::string> recipe_tasks() {
  return {"training", "conformance", "inference", "operator_benchmark", "op_matrix"};
}

std::vector<std::string> recipe_metrics(const Recipe& r) {
  if (r.task == "training") {
    std::vector<std::string> out = {
        "test_accuracy", "train_accuracy",   "train_loss", "test_loss",       "samples_per_second",
        "seconds",       "epochs_completed", "steps",      "time_to_accuracy"};
    if (r.training.ranks > 1)
      for (const char* m : {"communication_seconds", "compute_seconds", "communication_bytes",
                            "max_clock_gap", "mean_update_staleness"})
        out.push_back(m);
    return out;
  }
  if (r.task == "operator_benchmark") return benchmark_metrics(r.operator_benchmark);
  if (r.task == "op_matrix") return matrix_metrics(r.op_matrix);
  if (r.task == "inference")
    return {"latency.p50",   "latency.p90",   "latency.p99",   "samples_per_second",
            "outputs_match", "max_abs_error", "max_rel_error", "seconds"};
  std::vector<std::string> out = {"passed", "failed", "skipped", "cases", "pass_rate", "seconds"};
  for (const auto& suite : r.conformance.suites)
    for (const char* count : {"passed", "failed", "skipped"})
      out.push_back(cat(suite_name(suite), ".", count));
  return out;
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
  const auto tasks = recipe_tasks();
  if (std::find(tasks.begin(), tasks.end(), r.task) == tasks.end())
    top.fail("task", cat("unknown task '", r.task, "' (known: ", join(tasks, ", "), ")"));
  // Training needs a dataset and a model, inference a model; conformance
  // brings its own.
  for (const char* key : {"dataset", "model"})
    if ((r.task == "training" || (r.task == "inference" && key == std::string("model"))) &&
        !top.has(key))
      top.fail(key, "required, missing");
  if (top.has("dataset")) r.dataset = read_dataset(manifest_fields(top, "dataset", r));
  if (top.has("model")) r.model = read_model(manifest_fields(top, "model", r));
  r.has_reference = top.has("reference_log");
  if (r.has_reference)
    r.reference = read_reference_log(manifest_fields(top, "reference_log", r));
  else
    top.node("reference_log");

  if (r.task == "training") {
    r.training = read_training(top.section("training"));
    if (r.model.logits.empty())
      top.fail("model", "training an ONNX file needs model.logits: the class scores [N, C]");
  }
  if (r.task == "conformance") r.conformance = read_conformance(top.section("conformance"));
  if (r.task == "operator_benchmark")
    r.operator_benchmark = read_operator_benchmark(top.section("operator_benchmark"));
  if (r.task == "op_matrix") r.op_matrix = read_op_matrix(top.section("op_matrix"));
  if (r.task == "inference") {
    r.inference = read_inference(top.section("inference"));
    if (r.model.file.path.empty()) top.fail("model", "inference needs an ONNX file (model.file)");
  }

  const auto known = recipe_metrics(r);
  for (const auto& text : top.texts("criteria")) {
    top.check("criteria", [&] {
      Criterion c = parse_criterion(text);
      check_criterion(c, known, r.has_reference ? &r.reference : nullptr);
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
