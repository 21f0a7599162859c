// Datasets written in Python (docs/python.md, "Datasets in Python"): a
// training::Dataset over a Python object with __len__() and
// __getitem__(index) -> {field: array or number}, and optionally
// num_classes and a describe() string. The fields (names, element types,
// sample shapes) come from sample 0; every later sample must match them
// (Error naming the dataset, the sample and the field). fill() takes the
// GIL for each sample, so prefetch threads serialize on it.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "training/dataset.h"

namespace deep500::python {

std::unique_ptr<training::Dataset> python_dataset(const pybind11::object& source,
                                                  const std::string& role);

}  // namespace deep500::python
