// IDX files (the MNIST family: MNIST, Fashion-MNIST), read directly from
// their .gz (or uncompressed) files.
//
// Images: magic 0x00000803 (uint8, 3 dimensions), big-endian uint32 sizes
// N, rows, cols, then N*rows*cols pixel bytes. Labels: magic 0x00000801,
// size N, then N label bytes.
// Fields: "input" float32 [1, rows, cols] (pixel / 255) and "label" int64.
// The MNIST family has 10 classes: num_classes() is 10, and a label outside
// [0, 10) is an Error.
#pragma once

#include <memory>
#include <string>

#include "training/data/memory_dataset.h"

namespace deep500::training {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr int64_t kMnistClasses = 10;

class IdxDataset : public MemoryDataset {
 public:
  // Loads both files into memory (pixels stay uint8; fill() converts).
  IdxDataset(const std::string& images_path, const std::string& labels_path,
             const std::string& name, int64_t num_classes = kMnistClasses);
};

// Reads one IDX file of unsigned bytes with `rank` dimensions (magic
// 0x00000800 + rank): a uint8 tensor of the sizes the header gives. Error
// naming the file for a wrong magic, a truncated header or payload ("header
// promises 60000 x 28 x 28 = 47040000 bytes of data, file has ..."), or
// trailing bytes.
Tensor read_idx_u8(const std::string& path, int rank);

// The training (60000 samples) or test (10000) set of an MNIST-layout
// directory (train-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz, ...;
// the uncompressed names are found too). `name` goes into describe().
std::unique_ptr<IdxDataset> load_mnist_layout(const std::string& dir, bool train,
                                              const std::string& name);
// Fashion-MNIST from `dir` (Debian's dataset-fashion-mnist by default);
// Error naming the directory and the package when the files are missing.
std::unique_ptr<IdxDataset> load_fashion_mnist(bool train,
                                               const std::string& dir = kFashionMnistDir);

}  // namespace deep500::training
