#include "training/data/hdf5_dataset.h"

#include "deep/error.h"
#include "training/data/hdf5_io.h"

namespace deep500::training {
namespace {

std::vector<StoredField> load(const std::string& path,
                              const std::map<std::string, std::string>& field_datasets) {
  DEEP500_CHECK(!field_datasets.empty(), "HDF5Dataset: ", path, ": no fields given");
  std::vector<StoredField> fields;
  for (const auto& [field, name] : field_datasets) {
    fields.push_back(conventional_field(field, read_hdf5_dataset(path, name),
                                        cat("HDF5 file ", path, ", dataset '", name, "'")));
  }
  return fields;
}

std::string describe_fields(const std::string& path,
                            const std::map<std::string, std::string>& field_datasets) {
  std::string s = cat("hdf5 (", path);
  for (const auto& [field, name] : field_datasets) s += cat(", ", field, "=", name);
  return s + ")";
}

}  // namespace

HDF5Dataset::HDF5Dataset(const std::string& path,
                         const std::map<std::string, std::string>& field_datasets,
                         int64_t num_classes)
    : MemoryDataset(describe_fields(path, field_datasets), load(path, field_datasets),
                    num_classes) {}

}  // namespace deep500::training
