#include "training/data/cifar_dataset.h"

#include <cstring>

#include "deep/error.h"
#include "training/data/file_io.h"

namespace deep500::training {
namespace {

std::string kind_name(CifarKind kind) {
  return kind == CifarKind::kCifar10 ? "CIFAR-10" : "CIFAR-100";
}

std::vector<StoredField> load(const std::vector<std::string>& paths, CifarKind kind,
                              const std::string& name, bool coarse_label) {
  DEEP500_CHECK(!paths.empty(), name, ": no ", kind_name(kind), " batch files given");
  const int64_t record = CifarDataset::record_bytes(kind);
  const int label_bytes = static_cast<int>(record - CifarDataset::kPixels);
  std::vector<FileBytes> files;
  int64_t total = 0;
  for (const std::string& p : paths) {
    FileBytes f = read_maybe_gzip(p);
    DEEP500_CHECK(f.gz_problem.empty(), p, ": corrupt gzip stream: ", f.gz_problem);
    const int64_t size = static_cast<int64_t>(f.bytes.size());
    DEEP500_CHECK(size % record == 0, p, ": not a ", kind_name(kind),
                  " binary batch file: its size ", size, " is not a multiple of the record size ",
                  record, " (", label_bytes, " label byte", label_bytes > 1 ? "s" : "",
                  " + 3072 pixel bytes); ", size / record, " whole records and ", size % record,
                  " bytes left over");
    total += size / record;
    files.push_back(std::move(f));
  }
  Tensor images(DataType::UInt8, {total, 3, 32, 32});
  Tensor fine(DataType::UInt8, {total});
  Tensor coarse(DataType::UInt8, {total});
  auto* img = images.data<uint8_t>();
  int64_t n = 0;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const auto* b = reinterpret_cast<const unsigned char*>(files[fi].bytes.data());
    const int64_t count = static_cast<int64_t>(files[fi].bytes.size()) / record;
    for (int64_t r = 0; r < count; ++r, ++n) {
      const unsigned char* rec = b + r * record;
      const int fine_label = rec[label_bytes - 1];
      const int max_fine = kind == CifarKind::kCifar10 ? 10 : 100;
      DEEP500_CHECK(fine_label < max_fine, paths[fi], ": record ", r, " has ",
                    kind == CifarKind::kCifar10 ? "label " : "fine label ", fine_label,
                    ", outside [0, ", max_fine, ") (", kind_name(kind), ")");
      if (kind == CifarKind::kCifar100) {
        DEEP500_CHECK(rec[0] < 20, paths[fi], ": record ", r, " has coarse label ", int(rec[0]),
                      ", outside [0, 20) (CIFAR-100)");
        coarse.data<uint8_t>()[n] = rec[0];
      }
      fine.data<uint8_t>()[n] = static_cast<uint8_t>(fine_label);
      std::memcpy(img + n * CifarDataset::kPixels, rec + label_bytes, CifarDataset::kPixels);
    }
    files[fi].bytes = std::string();  // release as we go
  }
  std::vector<StoredField> fields{{"input", images, DataType::Float, 1.0 / 255.0},
                                  {"label", fine, DataType::Int64, 1.0}};
  if (coarse_label && kind == CifarKind::kCifar100)
    fields.push_back({"coarse_label", coarse, DataType::Int64, 1.0});
  return fields;
}

std::string describe_files(const std::string& name, const std::vector<std::string>& paths) {
  std::string s = name + " (";
  for (size_t i = 0; i < paths.size(); ++i) s += (i ? ", " : "") + paths[i];
  return s + ")";
}

}  // namespace

CifarDataset::CifarDataset(const std::vector<std::string>& paths, CifarKind kind,
                           const std::string& name, bool coarse_label)
    : MemoryDataset(describe_files(name, paths), load(paths, kind, name, coarse_label),
                    kind == CifarKind::kCifar10 ? 10 : 100) {}

}  // namespace deep500::training
