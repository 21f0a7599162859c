// The manifests of a recipe, after DLSpec: hardware, software, dataset,
// model and reference log. Each has a name, a semantic version and a
// description; each lives in its own YAML file (referenced by path from
// recipes, so that recipes share them) or is written inline. Read with
// Fields (recipes/format/yaml_fields.h): every key typed, unknown keys refused.
// docs/recipes.md documents every key.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "recipes/format/yaml_fields.h"
#include "recipes/tasks/processing.h"
#include "training/data/dataset_spec.h"

namespace deep500::recipes {

struct ManifestHeader {
  std::string name, version, description;
  std::string file;  // the YAML file it was read from ("" inline)
};

// A file the run reads, with its SHA-256 (lower-case hex; "" = not checked).
struct Artifact {
  std::string path;  // absolute (made so relative to the manifest's file)
  std::string sha256;
};

// What the machine must have. Numbers are constraints: ">=2", "<64", "==4"
// or a bare number meaning ">=".
struct HardwareManifest {
  ManifestHeader header;
  std::string architecture;          // uname's machine, e.g. x86_64 ("" = any)
  std::vector<std::string> isa;      // CPU flags that must be present, e.g. avx2
  std::string cores, memory_gib;     // constraints ("" = any)
  std::string gpus, gpu_memory_gib;  // count and per-GPU memory constraints
  std::string gpu_model;             // substring of the model name ("" = any)
  std::vector<std::string> setup;    // commands; recorded, never run by deep500
};

struct SoftwareManifest {
  ManifestHeader header;
  // name -> version constraint, e.g. onednn: ">=2.6", deep500: ">=0.1";
  // names as `deep500 info` lists them.
  std::map<std::string, std::string> requires_versions;
  std::string executor = "optimized";  // registry name or backend:NAMES
  // Kernel preference of the reference executor, e.g. [onednn, reference]
  // (conformance; empty = the registry's default).
  std::vector<std::string> backends;
  int threads = 1;
  // Set for the run's task only (recipe_environment_variables() alone).
  std::map<std::string, std::string> environment;
  std::map<std::string, std::string> settings;  // NAME: VALUE (deep500 settings)
};

struct DatasetManifest {
  ManifestHeader header;
  std::string license;
  std::string format;                       // idx, cifar10, npz, hdf5, synthetic
  std::map<std::string, Artifact> sources;  // by role: train_images, train, test, ...
  std::map<std::string, int64_t> splits;    // expected samples: train, test
  training::DatasetSpec spec;               // what is loaded
};

// A graph input or output as the manifest declares it.
struct ValueDecl {
  std::string name;
  std::string type;            // ONNX element type name, e.g. float32
  std::vector<int64_t> shape;  // -1 = any (a symbolic dimension)
};

struct ModelManifest {
  ManifestHeader header;
  std::string builtin;  // a built-in network (training/models.h), or
  Artifact file;        // an ONNX file
  std::string logits;   // class scores [N, C] ("logits" for built-ins; training needs it)
  std::vector<ValueDecl> inputs, outputs;  // checked against the graph
  // Inference: steps on every query input, and on every output before it is
  // compared with the reference outputs (recipes/tasks/processing.h).
  std::vector<ProcessingStep> preprocess, postprocess;
};

// An expected value: |measured - value| <= tolerance (absolute), or a
// relative tolerance when written as "5%".
struct ExpectedMetric {
  double value = 0;
  double tolerance = 0;
  bool relative = false;
};

// A reference measured as a seed ensemble (`deep500 run --record-reference
// N`) at one global batch size: every member's per-epoch curve of each
// metric, members in seed order (recipes/judging/reference_band.h judges
// runs against them).
struct ReferenceEnsemble {
  int64_t batch_size = 0;  // global: per-rank batch x ranks
  std::vector<int64_t> seeds;
  std::map<std::string, std::vector<std::vector<double>>> curves;  // metric -> member -> epochs
};

struct ReferenceLog {
  ManifestHeader header;
  std::map<std::string, std::string> produced_with;  // manifest -> "name version"
  std::map<std::string, std::string> machine;        // e.g. cpu_model, cores
  std::map<std::string, double> hyper_parameters;
  std::map<std::string, ExpectedMetric> metrics;
  std::vector<ReferenceEnsemble> ensembles;  // by increasing batch_size
};

// name, version (semantic, MAJOR.MINOR.PATCH) and description: the header of
// every manifest and of a recipe.
ManifestHeader read_header(Fields& f);

// Readers: `f` is the manifest's map (its file and path already set).
HardwareManifest read_hardware(Fields f);
// A software manifest's `environment` may set only the variables of
// recipe_environment_variables() (recipes/format/environment.h), and its
// `settings` none that loads code (ops::BackendSetting::loads_code): a
// recipe or a results file is untrusted input (docs/security.md).
SoftwareManifest read_software(Fields f);
DatasetManifest read_dataset(Fields f);
ModelManifest read_model(Fields f);
ReferenceLog read_reference_log(Fields f);

}  // namespace deep500::recipes
