// Whole-file reads of possibly gzip-compressed files for the dataset readers
// (plain reads: deep500::read_file in deep/onnx_tensor.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace deep500::training {

struct FileBytes {
  std::string bytes;       // the (decompressed) content
  bool gzip = false;       // the file was gzip-compressed
  std::string gz_problem;  // non-empty when the gzip stream was truncated or corrupt
  // Reading stopped one byte past the size the header declared (see
  // read_maybe_gzip's declared_size): the file has at least `bytes`.
  bool stopped_past_declared = false;
};

// Reads `path`, inflating it when it is gzip-compressed (zlib; a plain file
// is read as is). A truncated or corrupt gzip stream is not an Error here:
// the bytes inflated so far are returned with `gz_problem` set, so that the
// caller can say what it expected. Error when the file cannot be opened,
// or when it decompresses to more than the memory budget.
//
// `declared_size`, when given, reads the total size a format's header
// declares from the bytes so far (nullopt until there are enough): reading
// stops one byte past it, so that a small file inflating to far more than
// it declares (a gzip bomb) is "trailing data" at once, not after
// decompressing all of it.
FileBytes read_maybe_gzip(
    const std::string& path,
    const std::function<std::optional<uint64_t>(const std::string& bytes)>& declared_size = {});

}  // namespace deep500::training
