// NumPy .npz archives: a zip file of .npy entries (np.savez stores them,
// np.savez_compressed deflates them). The zip central directory is read
// (ZIP64 records included); each entry's CRC-32 is checked.
#pragma once

#include <map>
#include <string>

#include "deep/tensor.h"

namespace deep500::training {

// Every array of the archive by name ("x" for the entry "x.npy"). Error
// naming the file (and the entry) for a corrupt or truncated archive, an
// unsupported compression method or encryption, a CRC mismatch, or an entry
// read_npy rejects.
std::map<std::string, Tensor> read_npz(const std::string& path);

}  // namespace deep500::training
