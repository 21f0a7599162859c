// Datasets named by a kind and paths: what `deep500 train --dataset TEXT`
// and a recipe's dataset manifest (recipes/format/manifests.h) both build, so the
// two load the same data the same way. The text form:
//   fashion-mnist[:DIR]   mnist:DIR   cifar10:DIR
//   idx:IMAGES,LABELS[,TEST_IMAGES,TEST_LABELS]
//   npz:TRAIN.npz[,TEST.npz]   hdf5:TRAIN.h5[,TEST.h5]
//   synthetic:TRAIN_SIZE,TEST_SIZE:CxHxW:CLASSES[:SEED]
// .npz archives hold x_train/y_train[/x_test/y_test] (Keras) or
// input/label; HDF5 files hold the datasets "input" and "label".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "deep/shape.h"
#include "training/dataset.h"

namespace deep500::training {

struct DatasetSpec {
  std::string kind;  // fashion-mnist, mnist, idx, cifar10, npz, hdf5, synthetic
  // A folder (fashion-mnist, mnist, cifar10) or files in the order above;
  // cifar10 also takes its six files (data_batch_1..5.bin, test_batch.bin).
  std::vector<std::string> paths;
  // synthetic only: samples per split, one sample's input shape, classes, seed.
  int64_t train_size = 0, test_size = 0;
  Shape input_shape;
  int64_t classes = 0;
  uint64_t seed = 0;
};

// The dataset kinds, as named in the text form.
std::vector<std::string> dataset_kinds();

// Parses the text form; Error naming `what` (e.g. "--dataset X") and the
// expected form. Paths are not opened here.
DatasetSpec parse_dataset_spec(const std::string& text, const std::string& what);

// The text form of `spec` (what parse_dataset_spec reads back).
std::string to_string(const DatasetSpec& spec);

struct TrainTestData {
  std::unique_ptr<Dataset> train;
  std::unique_ptr<Dataset> test;  // null when the dataset has no test split
};

// Loads both splits. Error naming `what` and the file when a path is missing
// or a file is malformed (the readers check their files fully).
TrainTestData load_datasets(const DatasetSpec& spec, const std::string& what);

}  // namespace deep500::training
