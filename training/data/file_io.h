// Whole-file reads of possibly gzip-compressed files for the dataset readers
// (plain reads: deep500::read_file in deep/onnx_tensor.h).
#pragma once

#include <string>

namespace deep500::training {

struct FileBytes {
  std::string bytes;       // the (decompressed) content
  bool gzip = false;       // the file was gzip-compressed
  std::string gz_problem;  // non-empty when the gzip stream was truncated or corrupt
};

// Reads `path`, inflating it when it is gzip-compressed (zlib; a plain file
// is read as is). A truncated or corrupt gzip stream is not an Error here:
// the bytes inflated so far are returned with `gz_problem` set, so that the
// caller can say what it expected. Error when the file cannot be opened.
FileBytes read_maybe_gzip(const std::string& path);

}  // namespace deep500::training
