#include "training/data/dataset_spec.h"

#include <algorithm>
#include <filesystem>

#include "deep/error.h"
#include "deep/sizes.h"
#include "deep/text.h"
#include "training/data/cifar_dataset.h"
#include "training/data/hdf5_dataset.h"
#include "training/data/idx_dataset.h"
#include "training/data/npy_dataset.h"
#include "training/data/npz.h"
#include "training/data/synthetic_dataset.h"

namespace deep500::training {

namespace {

constexpr const char* kForms =
    "fashion-mnist[:DIR], mnist:DIR, idx:IMAGES,LABELS[,TEST_IMAGES,TEST_LABELS], cifar10:DIR, "
    "npz:TRAIN.npz[,TEST.npz], hdf5:TRAIN.h5[,TEST.h5], "
    "synthetic:TRAIN_SIZE,TEST_SIZE:CxHxW:CLASSES[:SEED]";

int64_t count(const std::string& text, const std::string& what, const char* field) {
  int64_t v = 0;
  DEEP500_CHECK(parse_int(text, v) && v >= 0, what, ": ", field, ": expected a count >= 0, got '",
                text, "'");
  return v;
}

DatasetSpec parse_synthetic(const std::vector<std::string>& p, const std::string& what) {
  DEEP500_CHECK(p.size() == 3 || p.size() == 4, what,
                ": expected synthetic:TRAIN_SIZE,TEST_SIZE:CxHxW:CLASSES[:SEED]");
  DatasetSpec s{.kind = "synthetic"};
  auto sizes = split(p[0], ',');
  DEEP500_CHECK(sizes.size() == 2, what, ": expected TRAIN_SIZE,TEST_SIZE, got '", p[0], "'");
  s.train_size = count(sizes[0], what, "TRAIN_SIZE");
  s.test_size = count(sizes[1], what, "TEST_SIZE");
  for (const auto& d : split(p[1], 'x')) s.input_shape.push_back(count(d, what, "shape"));
  s.classes = count(p[2], what, "CLASSES");
  if (p.size() == 4) s.seed = static_cast<uint64_t>(count(p[3], what, "SEED"));
  return s;
}

void require_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  DEEP500_CHECK(std::filesystem::exists(path, ec), what, ": file not found: ", path);
}

std::unique_ptr<Dataset> npz_fields(const std::string& path, const std::string& input,
                                    const std::string& label) {
  return std::make_unique<NpyDataset>(
      NpyDataset::from_npz(path, {{"input", input}, {"label", label}}));
}

// One archive with x_train/y_train[/x_test/y_test] (Keras layout), or
// archives holding "input" and "label" (the second one the test split).
TrainTestData load_npz(const std::vector<std::string>& p) {
  auto arrays = read_npz(p[0]);
  TrainTestData d;
  if (arrays.count("x_train") && arrays.count("y_train")) {
    d.train = npz_fields(p[0], "x_train", "y_train");
    if (arrays.count("x_test") && arrays.count("y_test"))
      d.test = npz_fields(p[0], "x_test", "y_test");
  } else {
    d.train = npz_fields(p[0], "input", "label");
  }
  if (p.size() == 2) d.test = npz_fields(p[1], "input", "label");
  return d;
}

TrainTestData load_cifar10(const std::vector<std::string>& paths, const std::string& what) {
  std::vector<std::string> train_files;
  std::string test_file;
  if (paths.size() == 1) {
    for (int i = 1; i <= 5; ++i) train_files.push_back(cat(paths[0], "/data_batch_", i, ".bin"));
    test_file = paths[0] + "/test_batch.bin";
  } else {
    train_files.assign(paths.begin(), paths.end() - 1);
    test_file = paths.back();
  }
  for (const auto& p : train_files) require_file(p, what);
  require_file(test_file, what);
  return {std::make_unique<CifarDataset>(train_files, CifarKind::kCifar10, "CIFAR-10 train"),
          std::make_unique<CifarDataset>(std::vector<std::string>{test_file}, CifarKind::kCifar10,
                                         "CIFAR-10 test")};
}

}  // namespace

std::vector<std::string> dataset_kinds() {
  return {"fashion-mnist", "mnist", "idx", "cifar10", "npz", "hdf5", "synthetic"};
}

DatasetSpec parse_dataset_spec(const std::string& text, const std::string& what) {
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string args = colon == std::string::npos ? "" : text.substr(colon + 1);
  const auto kinds = dataset_kinds();
  DEEP500_CHECK(std::find(kinds.begin(), kinds.end(), kind) != kinds.end(), what,
                ": unknown dataset kind '", kind, "' (known: ", kForms, ")");
  if (kind == "synthetic") return parse_synthetic(split(args, ':'), what);
  DatasetSpec s{.kind = kind};
  const bool folder = kind == "fashion-mnist" || kind == "mnist" || kind == "cifar10";
  if (!args.empty()) s.paths = folder ? std::vector<std::string>{args} : split(args, ',');
  const size_t n = s.paths.size();
  bool ok = false;
  if (kind == "fashion-mnist") ok = n <= 1;
  if (kind == "mnist" || kind == "cifar10") ok = n == 1;
  if (kind == "idx") ok = n == 2 || n == 4;
  if (kind == "npz" || kind == "hdf5") ok = n == 1 || n == 2;
  DEEP500_CHECK(ok, what, ": expected one of ", kForms);
  return s;
}

std::string to_string(const DatasetSpec& s) {
  if (s.kind == "synthetic") {
    std::vector<std::string> dims;
    for (int64_t v : s.input_shape) dims.push_back(std::to_string(v));
    return cat("synthetic:", s.train_size, ",", s.test_size, ":", join(dims, "x"), ":", s.classes,
               ":", s.seed);
  }
  return s.paths.empty() ? s.kind : cat(s.kind, ":", join(s.paths, ","));
}

TrainTestData load_datasets(const DatasetSpec& s, const std::string& what) {
  const auto& p = s.paths;
  if (s.kind == "fashion-mnist") {
    const std::string dir = p.empty() ? kFashionMnistDir : p[0];
    return {load_fashion_mnist(true, dir), load_fashion_mnist(false, dir)};
  }
  if (s.kind == "mnist") {
    DEEP500_CHECK(p.size() == 1, what, ": expected mnist:DIR");
    return {load_mnist_layout(p[0], true, "MNIST train"),
            load_mnist_layout(p[0], false, "MNIST test")};
  }
  if (s.kind == "cifar10") {
    DEEP500_CHECK(p.size() == 1 || p.size() == 6, what,
                  ": expected cifar10:DIR or its six files (data_batch_1..5.bin, test_batch.bin)");
    return load_cifar10(p, what);
  }
  for (const auto& path : p) require_file(path, what);
  if (s.kind == "idx") {
    DEEP500_CHECK(p.size() == 2 || p.size() == 4, what,
                  ": expected idx:IMAGES,LABELS[,TEST_IMAGES,TEST_LABELS]");
    TrainTestData d{std::make_unique<IdxDataset>(p[0], p[1], "IDX train"), nullptr};
    if (p.size() == 4) d.test = std::make_unique<IdxDataset>(p[2], p[3], "IDX test");
    return d;
  }
  if (s.kind == "npz" || s.kind == "hdf5") {
    DEEP500_CHECK(p.size() == 1 || p.size() == 2, what, ": expected ", s.kind, ":TRAIN[,TEST]");
    if (s.kind == "hdf5") {
      auto h5 = [](const std::string& path) {
        return std::make_unique<HDF5Dataset>(
            path, std::map<std::string, std::string>{{"input", "input"}, {"label", "label"}});
      };
      return {h5(p[0]), p.size() == 2 ? h5(p[1]) : nullptr};
    }
    return load_npz(p);
  }
  if (s.kind == "synthetic") {
    DEEP500_CHECK(s.classes >= 2 && !s.input_shape.empty(), what,
                  ": synthetic data needs a shape and at least 2 classes");
    checked_numel(s.input_shape, what);
    return {std::make_unique<SyntheticDataset>(s.train_size, s.input_shape, s.classes, s.seed),
            s.test_size > 0 ? std::make_unique<SyntheticDataset>(s.test_size, s.input_shape,
                                                                 s.classes, s.seed + 1)
                            : nullptr};
  }
  throw Error(cat(what, ": unknown dataset kind '", s.kind, "' (known: ", kForms, ")"));
}

}  // namespace deep500::training
