// NumPy .npy files (format versions 1.0-3.0): read into / write from Tensor.
// Little-endian C-order arrays of bool, integer, float16/32/64 elements.
// Fortran-order arrays, big-endian data, strings and objects are refused
// with an Error naming the file and what was found.
#pragma once

#include <string>

#include "deep/tensor.h"

namespace deep500 {

// Throws Error naming `path` when it is missing, truncated, not an .npy file
// or holds an unsupported element type / layout.
Tensor read_npy(const std::string& path);
// Writes `t` (version 1.0 header, or 2.0 when the header needs it). Throws
// Error naming `path` when it cannot be written or the dtype has no .npy form.
void write_npy(const std::string& path, const Tensor& t);

}  // namespace deep500
