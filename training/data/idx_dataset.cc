#include "training/data/idx_dataset.h"

#include <cstring>
#include <filesystem>
#include <sstream>

#include "deep/error.h"
#include "training/data/file_io.h"

namespace deep500::training {
namespace {

uint32_t be32(const std::string& b, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

std::string hex32(uint32_t v) {
  std::ostringstream s;
  s << "0x";
  s.width(8);
  s.fill('0');
  s << std::hex << v;
  return s.str();
}

std::string gz_note(const FileBytes& f) {
  return f.gz_problem.empty() ? "" : cat(" (gzip stream: ", f.gz_problem, ")");
}

// Header plus data bytes an IDX header declares, once `bytes` hold the
// header (a count that overflows is capped past any file).
std::optional<uint64_t> declared_idx_size(const std::string& bytes, int rank) {
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header) return std::nullopt;
  uint64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    const uint32_t n = be32(bytes, 4 + 4 * static_cast<size_t>(d));
    count = (n != 0 && count > (uint64_t{1} << 62) / n) ? (uint64_t{1} << 62) : count * n;
  }
  return header + count;
}

}  // namespace

Tensor read_idx_u8(const std::string& path, int rank) {
  const FileBytes f =
      read_maybe_gzip(path, [rank](const std::string& b) { return declared_idx_size(b, rank); });
  const std::string what = f.gzip ? "bytes after decompression" : "bytes";
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  const uint32_t want_magic = 0x00000800u + static_cast<uint32_t>(rank);
  DEEP500_CHECK(f.bytes.size() >= 4, path, ": truncated: an IDX file starts with a 4-byte magic ",
                hex32(want_magic), ", file has ", f.bytes.size(), " ", what, gz_note(f));
  const uint32_t magic = be32(f.bytes, 0);
  DEEP500_CHECK(magic == want_magic, path, ": not an IDX file of unsigned bytes with ", rank,
                " dimension", rank == 1 ? "" : "s", ": expected magic ", hex32(want_magic),
                ", read ", hex32(magic));
  DEEP500_CHECK(f.bytes.size() >= header, path, ": truncated: the IDX header needs ", header,
                " bytes, file has ", f.bytes.size(), " ", what, gz_note(f));
  Shape shape;
  std::string dims;
  uint64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    const uint32_t n = be32(f.bytes, 4 + 4 * d);
    shape.push_back(n);
    // A corrupt header could overflow the product: cap it past any file size.
    count = (n != 0 && count > (uint64_t{1} << 62) / n) ? (uint64_t{1} << 62) : count * n;
    dims += (d ? " x " : "") + std::to_string(n);
  }
  const uint64_t have = f.bytes.size() - header;
  DEEP500_CHECK(have == count, path, ": ", have < count ? "truncated" : "trailing data",
                ": header promises ", rank > 1 ? dims + " = " : "", count,
                " bytes of data, file has ", f.stopped_past_declared ? "more than that" : "",
                f.stopped_past_declared ? "" : cat(have, " ", what), gz_note(f));
  DEEP500_CHECK(f.gz_problem.empty(), path, ": corrupt gzip stream: ", f.gz_problem);
  Tensor t(DataType::UInt8, shape);
  if (count > 0) std::memcpy(t.raw(), f.bytes.data() + header, count);
  return t;
}

IdxDataset::IdxDataset(const std::string& images_path, const std::string& labels_path,
                       const std::string& name, int64_t num_classes)
    : MemoryDataset(
          cat(name, " (", images_path, ", ", labels_path, ")"),
          [&] {
            Tensor images = read_idx_u8(images_path, 3);
            Tensor labels = read_idx_u8(labels_path, 1);
            DEEP500_CHECK(images.dim(0) == labels.dim(0), name, ": images file ", images_path,
                          " has ", images.dim(0), " images but labels file ", labels_path, " has ",
                          labels.dim(0), " labels (expected the same count)");
            check_labels(labels, num_classes, cat("labels file ", labels_path));
            Shape chw{images.dim(0), 1, images.dim(1), images.dim(2)};
            return std::vector<StoredField>{
                {"input", images.view(chw), DataType::Float, 1.0 / 255.0},
                {"label", labels, DataType::Int64, 1.0}};
          }(),
          num_classes) {}

namespace {

// `dir`/`base`.gz, else `dir`/`base`; empty when neither exists.
std::string find_file(const std::string& dir, const std::string& base) {
  namespace fs = std::filesystem;
  for (const std::string& p : {base + ".gz", base}) {
    const fs::path full = fs::path(dir) / p;
    if (fs::exists(full)) return full.string();
  }
  return {};
}

}  // namespace

std::unique_ptr<IdxDataset> load_mnist_layout(const std::string& dir, bool train,
                                              const std::string& name) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_base = prefix + "-images-idx3-ubyte";
  const std::string labels_base = prefix + "-labels-idx1-ubyte";
  const std::string images = find_file(dir, images_base);
  const std::string labels = find_file(dir, labels_base);
  DEEP500_CHECK(!images.empty() && !labels.empty(), name, ": ", dir, " has no ",
                images.empty() ? images_base : labels_base,
                "(.gz) (expected the four MNIST-layout IDX files there)");
  return std::make_unique<IdxDataset>(images, labels, cat(name, train ? " train" : " test"));
}

std::unique_ptr<IdxDataset> load_fashion_mnist(bool train, const std::string& dir) {
  namespace fs = std::filesystem;
  DEEP500_CHECK(fs::is_directory(dir), "Fashion-MNIST: directory ", dir,
                " does not exist (install the Debian package dataset-fashion-mnist, or pass the "
                "directory holding train-images-idx3-ubyte.gz and the other IDX files)");
  return load_mnist_layout(dir, train, "Fashion-MNIST");
}

}  // namespace deep500::training
