// Named tensors in HDF5 files (H5Cpp): the dataset reader and the trainer's
// checkpoints use these.
//
// Names may contain group paths ("opt/m/w1" is dataset w1 in group opt/m;
// groups are created as needed). Element types: float32/64, int8/16/32/64,
// uint8/16/32/64. Datasets of rank >= 1 with data are chunked along dim 0
// (about 1 MiB per chunk) and optionally gzip-compressed; scalars and empty
// tensors are stored contiguously. String attributes live on the root group.
//
// Every HDF5 failure becomes a deep500::Error naming the file and dataset
// (HDF5's own error printing is turned off). The serial HDF5 library is not
// thread-safe: these functions serialise on one process-wide mutex.
#pragma once

#include <map>
#include <string>

#include "deep/tensor.h"

namespace deep500::training {

struct Hdf5WriteOptions {
  int gzip_level = 0;             // 0: no compression; 1..9: deflate level
  int64_t chunk_bytes = 1 << 20;  // target chunk size (rows = max(1, this / row bytes))
};

// Writes a new file `path` holding `tensors` and `attributes`. Atomic: the
// file is written under a temporary name in the same directory and renamed
// over `path` only when complete, so a failure leaves any old file intact.
void write_hdf5(const std::string& path, const std::map<std::string, Tensor>& tensors,
                const std::map<std::string, std::string>& attributes = {},
                const Hdf5WriteOptions& options = {});

// Reading: files may be damaged or crafted. Each read runs first in a child
// process (libhdf5 itself can crash on a corrupted file: that becomes an
// Error naming the file, "damaged: libhdf5 crashed with signal 11 ...");
// only a read that succeeded there runs in this process. Stored sizes are
// checked against the dataspace before a dataset is read.
// Every dataset of the file, by its full path without the leading '/'.
std::map<std::string, Tensor> read_hdf5(const std::string& path);
// One dataset ("opt/m/w1").
Tensor read_hdf5_dataset(const std::string& path, const std::string& name);
// The string attributes of the root group.
std::map<std::string, std::string> read_hdf5_attributes(const std::string& path);

// How a dataset is stored (for tests and tools): its chunk shape, empty when
// the layout is not chunked, and whether gzip (deflate) is applied.
struct Hdf5Layout {
  std::vector<int64_t> chunk;
  bool gzip = false;
};
Hdf5Layout hdf5_layout(const std::string& path, const std::string& name);

}  // namespace deep500::training
