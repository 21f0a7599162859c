// Tensors to and from NumPy arrays for the bindings (python/bindings/).
//  * to_numpy: zero-copy; the array keeps the tensor's storage alive. A
//    tensor over memory it does not own (Tensor::borrow) is copied first, so
//    no array outlives memory it points into. bfloat16 (which NumPy lacks)
//    becomes float32; strings become an object array of str.
//  * borrow_array: a C-contiguous array of a supported dtype is borrowed
//    (zero-copy) for the duration of one call; other layouts are copied to
//    a contiguous array first; lists and scalars are converted by NumPy.
//    Unsupported dtypes are an Error naming `where`.
// dtypes map both ways: float16/32/64, int8/16/32/64, uint8/16/32/64, bool,
// str (object arrays of str).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <map>
#include <string>
#include <vector>

#include "deep/tensor.h"

namespace deep500::python {

pybind11::object to_numpy(const Tensor& t);
pybind11::dict to_numpy(const std::map<std::string, Tensor>& tensors);
pybind11::list to_numpy(const std::vector<Tensor>& tensors);

// Tensors borrowed from Python objects; the objects stay referenced (and
// their memory valid) while this lives. Build and destroy it with the GIL.
struct Borrowed {
  std::vector<Tensor> tensors;
  std::vector<pybind11::object> owners;
  Tensor add(const pybind11::handle& value, const std::string& where);
};

// `None` becomes an undefined Tensor (an absent optional input).
std::vector<Tensor> borrow_list(Borrowed& keep, const pybind11::sequence& values,
                                const std::string& where);
std::map<std::string, Tensor> borrow_dict(Borrowed& keep, const pybind11::dict& values,
                                          const std::string& where);

}  // namespace deep500::python
