#include "recipes/format/manifests.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>

#include "deep/dtype.h"
#include "deep/error.h"
#include "deep/text.h"
#include "operators/registry.h"
#include "recipes/format/constraints.h"
#include "recipes/format/environment.h"

namespace deep500::recipes {

namespace {

constexpr int64_t kMaxCount = int64_t{1} << 40;

}  // namespace

ManifestHeader read_header(Fields& f) {
  ManifestHeader h;
  h.name = f.required_text("name");
  h.version = f.required_text("version");
  if (!is_semantic_version(h.version))
    f.fail("version", cat("expected a semantic version MAJOR.MINOR.PATCH, got '", h.version, "'"));
  h.description = f.required_text("description");
  h.file = f.file();
  return h;
}

namespace {

std::string constraint(Fields& f, const std::string& key, bool version) {
  const std::string c = f.text(key, "");
  f.check(key, [&] { check_constraint_syntax(c, version, ""); });
  return c;
}

Artifact read_artifact(Fields f) {
  Artifact a;
  a.path = f.absolute(f.required_text("path"));
  f.resolve("path", YAML::Node(a.path));
  a.sha256 = f.text("sha256", "");
  const bool hex = std::all_of(a.sha256.begin(), a.sha256.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
  });
  if (!a.sha256.empty() && (a.sha256.size() != 64 || !hex))
    f.fail("sha256", cat("expected 64 lower-case hex digits, got '", a.sha256, "'"));
  f.finish();
  return a;
}

// The roles a dataset format reads, required ones first.
struct Roles {
  std::vector<std::string> required, optional;
};

Roles roles_of(const std::string& format) {
  if (format == "idx") return {{"train_images", "train_labels"}, {"test_images", "test_labels"}};
  if (format == "cifar10")
    return {{"data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5",
             "test_batch"},
            {}};
  if (format == "npz" || format == "hdf5") return {{"train"}, {"test"}};
  return {};
}

std::vector<ValueDecl> read_values(Fields& f, const std::string& key) {
  std::vector<ValueDecl> out;
  f.for_each_map(key, "{name, type, shape}", [&](Fields& v) {
    ValueDecl d;
    d.name = v.required_text("name");
    d.type = v.text("type", "float32");
    v.check("type", [&] { parse_dtype(d.type, "type"); });
    for (const auto& dim : v.texts("shape")) {
      int64_t n = -1;
      if (parse_int(dim, n) && n < 1)
        v.fail("shape", cat("expected dimensions >= 1 or names such as N, got '", dim, "'"));
      if (!parse_int(dim, n)) n = -1;  // a symbolic dimension
      d.shape.push_back(n);
    }
    v.finish();
    out.push_back(d);
  });
  return out;
}

std::vector<double> numbers(Fields& f, const std::string& key) {
  std::vector<double> out;
  for (const auto& text : f.texts(key)) {
    double v = 0;
    if (!parse_float(text, v) || !std::isfinite(v))
      f.fail(key, cat("expected numbers, got '", text, "'"));
    out.push_back(v);
  }
  return out;
}

// Each step reads only its own keys, so a key another step takes is refused.
std::vector<ProcessingStep> read_steps(Fields& f, const std::string& key) {
  std::vector<ProcessingStep> out;
  f.for_each_map(key, "{step, ...} (recipes/tasks/processing.h)", [&](Fields& g) {
    ProcessingStep s;
    s.step = g.required_text("step");
    if (s.step == "layout") {
      s.from = g.required_text("from");
      s.to = g.required_text("to");
    }
    if (s.step == "resize" || s.step == "crop")
      for (const auto& text : g.texts("size")) {
        int64_t n = 0;
        if (!parse_int(text, n)) g.fail("size", cat("expected [H, W], got '", text, "'"));
        s.size.push_back(n);
      }
    if (s.step == "normalize") {
      s.mean = numbers(g, "mean");
      s.stdev = numbers(g, "std");
    }
    if (s.step == "top_k") s.k = g.integer("k", 0, 1, 1 << 20);
    g.check("step", [&] { check_step(s); });
    g.finish();
    out.push_back(s);
  });
  return out;
}

}  // namespace

HardwareManifest read_hardware(Fields f) {
  HardwareManifest h;
  h.header = read_header(f);
  h.architecture = f.text("architecture", "");
  h.isa = f.texts("isa");
  h.cores = constraint(f, "cores", false);
  h.memory_gib = constraint(f, "memory_gib", false);
  Fields gpus = f.section("gpus");
  h.gpus = constraint(gpus, "count", false);
  h.gpu_model = gpus.text("model", "");
  h.gpu_memory_gib = constraint(gpus, "memory_gib", false);
  gpus.finish();
  h.setup = f.texts("setup");
  f.finish();
  return h;
}

SoftwareManifest read_software(Fields f) {
  SoftwareManifest s;
  s.header = read_header(f);
  s.requires_versions = f.text_map("requires");
  for (const auto& entry : s.requires_versions)
    f.check("requires", [&] { check_constraint_syntax(entry.second, true, entry.first); });
  s.executor = f.text("executor", s.executor);
  s.backends = f.texts("backends");
  s.threads = static_cast<int>(f.integer("threads", s.threads, 0, 4096));
  s.environment = f.text_map("environment");
  for (const auto& [name, value] : s.environment)
    f.check("environment", [&] {
      const auto& allowed = recipe_environment_variables();
      DEEP500_CHECK(std::find(allowed.begin(), allowed.end(), name) != allowed.end(), name,
                    " may not be set by a recipe (it could make a program load code); allowed: ",
                    join(allowed, ", "));
    });
  s.settings = f.text_map("settings");
  for (const auto& [name, value] : s.settings)
    f.check("settings", [&] {
      DEEP500_CHECK(!ops::Registry::global().setting_loads_code(name), "setting ", name,
                    " names code to load: give it on the command line or in the environment "
                    "(deep500 settings), never in a recipe");
    });
  f.finish();
  return s;
}

DatasetManifest read_dataset(Fields f) {
  DatasetManifest d;
  d.header = read_header(f);
  d.license = f.text("license", "");
  d.format = f.required_text("format");
  const std::vector<std::string> formats = {"idx", "cifar10", "npz", "hdf5", "synthetic"};
  if (std::find(formats.begin(), formats.end(), d.format) == formats.end())
    f.fail("format", cat("unknown format '", d.format, "' (known: ", join(formats, ", "), ")"));
  d.spec.kind = d.format;

  const Roles roles = roles_of(d.format);
  Fields sources = f.section("sources");
  for (const auto* list : {&roles.required, &roles.optional})
    for (const auto& role : *list) {
      if (!sources.has(role)) {
        if (list == &roles.required) sources.fail(role, "required, missing");
        sources.node(role);
        continue;
      }
      d.sources[role] = read_artifact(sources.section(role));
      d.spec.paths.push_back(d.sources[role].path);
    }
  sources.finish();
  if (d.format == "idx" && d.spec.paths.size() == 3)
    f.fail("sources", "test_images and test_labels come together");

  Fields splits = f.section("splits");
  for (const char* split_name : {"train", "test"}) {
    const int64_t n = splits.integer(split_name, 0, 0, kMaxCount);
    if (n > 0) d.splits[split_name] = n;
  }
  splits.finish();
  if (d.format == "synthetic") {
    if (!d.splits.count("train")) f.fail("splits", "synthetic data needs splits.train");
    d.spec.train_size = d.splits["train"];
    d.spec.test_size = d.splits.count("test") ? d.splits["test"] : 0;
    for (const auto& dim : f.texts("shape")) {
      int64_t n = 0;
      if (!parse_int(dim, n) || n < 1 || n > kMaxCount)
        f.fail("shape", cat("expected dimensions >= 1, got '", dim, "'"));
      d.spec.input_shape.push_back(n);
    }
    if (d.spec.input_shape.empty()) f.fail("shape", "required for synthetic data, missing");
    d.spec.classes = f.integer("classes", 10, 2, kMaxCount);
    d.spec.seed = static_cast<uint64_t>(f.integer("seed", 0, 0, kMaxCount));
  }
  f.finish();
  return d;
}

ModelManifest read_model(Fields f) {
  ModelManifest m;
  m.header = read_header(f);
  m.builtin = f.text("builtin", "");
  if (f.has("file"))
    m.file = read_artifact(f.section("file"));
  else
    f.node("file");
  if (m.builtin.empty() == m.file.path.empty())
    f.fail(m.builtin.empty() ? "file" : "builtin",
           "give either builtin: NAME or file: {path, sha256}");
  m.logits = f.text("logits", m.builtin.empty() ? "" : "logits");
  m.inputs = read_values(f, "inputs");
  m.outputs = read_values(f, "outputs");
  m.preprocess = read_steps(f, "preprocess");
  m.postprocess = read_steps(f, "postprocess");
  f.finish();
  return m;
}

// ensembles[i]: {batch_size, seeds, curves: {METRIC: [[per epoch] per member]}}.
ReferenceEnsemble read_reference_ensemble(Fields& f) {
  ReferenceEnsemble e;
  e.batch_size = f.integer("batch_size", 0, 1, int64_t{1} << 40);
  if (!f.has("batch_size")) f.fail("batch_size", "required, missing (the global batch size)");
  for (const auto& text : f.texts("seeds")) {
    int64_t seed = 0;
    if (!parse_int(text, seed) || seed < 0)
      f.fail("seeds", cat("expected seeds (integers >= 0), got '", text, "'"));
    e.seeds.push_back(seed);
  }
  if (e.seeds.size() < 2) f.fail("seeds", "an ensemble needs at least 2 members");
  YAML::Node raw = f.node("curves");
  Fields curves = f.section("curves");
  if (raw && raw.IsMap())
    for (const auto& kv : raw) {
      const std::string metric = kv.first.Scalar();
      auto rows = curves.number_rows(metric);
      if (rows.size() != e.seeds.size())
        curves.fail(metric,
                    cat("one curve per seed expected: ", e.seeds.size(), ", got ", rows.size()));
      for (const auto& row : rows)
        if (row.empty()) curves.fail(metric, "a member's curve is empty");
      e.curves[metric] = std::move(rows);
    }
  else if (raw.IsDefined() && !raw.IsNull())
    f.fail("curves", "expected a map of metric -> one list of per-epoch values per seed");
  curves.finish();
  f.finish();
  return e;
}

ReferenceLog read_reference_log(Fields f) {
  ReferenceLog r;
  r.header = read_header(f);
  r.produced_with = f.text_map("produced_with");
  r.machine = f.text_map("machine");
  r.hyper_parameters = f.number_map("hyper_parameters");
  Fields metrics = f.section("metrics");
  YAML::Node raw = f.node("metrics");
  if (raw && raw.IsMap())
    for (const auto& kv : raw) {
      const std::string name = kv.first.Scalar();
      Fields m = metrics.section(name);
      ExpectedMetric e;
      e.value = m.number("value", 0, -std::numeric_limits<double>::max(),
                         std::numeric_limits<double>::max());
      if (!m.has("value")) m.fail("value", "required, missing");
      std::string tol = m.text("tolerance", "0");
      e.relative = !tol.empty() && tol.back() == '%';
      if (e.relative) tol.pop_back();
      if (!parse_float(tol, e.tolerance) || !(e.tolerance >= 0))
        m.fail("tolerance", cat("expected a number >= 0 or a percentage such as 5%, got '",
                                m.text("tolerance", ""), "'"));
      m.finish();
      r.metrics[name] = e;
    }
  metrics.finish();
  f.for_each_map("ensembles", "seed ensembles ({batch_size, seeds, curves})", [&](Fields& e) {
    r.ensembles.push_back(read_reference_ensemble(e));
    if (r.ensembles.size() > 1 &&
        r.ensembles.back().batch_size <= r.ensembles[r.ensembles.size() - 2].batch_size)
      e.fail("batch_size", "ensembles must be listed by increasing batch_size");
  });
  f.finish();
  return r;
}

}  // namespace deep500::recipes
