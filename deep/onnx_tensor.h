// Conversion between ONNX TensorProto and Tensor, and reading .pb files.
#pragma once

#include <fstream>
#include <string>

#include <onnx/onnx_pb.h>

#include "deep/tensor.h"

namespace deep500 {

// Converts a TensorProto (raw_data or typed fields). `what` names the source
// in error messages (a file, an initializer, an attribute).
Tensor from_onnx(const onnx::TensorProto& proto, const std::string& what);
// Like from_onnx, but a tensor stored as raw_data (numeric, aligned for its
// element type) borrows the proto's bytes instead of copying them (see
// Tensor::borrow): `proto` must outlive the result and stay unchanged.
Tensor view_onnx(const onnx::TensorProto& proto, const std::string& what);
onnx::TensorProto to_onnx(const Tensor& t, const std::string& name);

// Reads a serialized TensorProto file; throws Error naming the file when it
// is missing, truncated or not a TensorProto.
onnx::TensorProto read_tensor_proto(const std::string& path);
// Reads any file into a string; throws Error naming the file.
std::string read_file(const std::string& path);
// Opens a regular file whose size (set in `size`) is within the memory
// budget, for reading as a stream; throws Error naming it otherwise.
std::ifstream open_within_budget(const std::string& path, uint64_t& size);
// The size of `path`, which must be a regular file (a device such as
// /dev/zero or a pipe has no end); throws Error naming it otherwise.
uint64_t regular_file_size(const std::string& path);

}  // namespace deep500
