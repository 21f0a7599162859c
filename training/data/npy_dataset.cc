#include "training/data/npy_dataset.h"

#include "deep/error.h"
#include "deep/npy.h"
#include "training/data/npz.h"

namespace deep500::training {
namespace {

std::string describe_files(const std::map<std::string, std::string>& field_files) {
  std::string s = "npy (";
  bool first = true;
  for (const auto& [field, file] : field_files) {
    s += cat(first ? "" : ", ", field, "=", file);
    first = false;
  }
  return s + ")";
}

std::vector<StoredField> load_npy(const std::map<std::string, std::string>& field_files) {
  DEEP500_CHECK(!field_files.empty(), "NpyDataset: no fields given");
  std::vector<StoredField> fields;
  for (const auto& [field, file] : field_files)
    fields.push_back(conventional_field(field, read_npy(file), file));
  return fields;
}

}  // namespace

NpyDataset::NpyDataset(const std::map<std::string, std::string>& field_files, int64_t num_classes)
    : MemoryDataset(describe_files(field_files), load_npy(field_files), num_classes) {}

NpyDataset NpyDataset::from_npz(const std::string& path,
                                const std::map<std::string, std::string>& field_arrays,
                                int64_t num_classes) {
  std::map<std::string, Tensor> arrays = read_npz(path);
  std::vector<StoredField> fields;
  if (field_arrays.empty()) {
    DEEP500_CHECK(!arrays.empty(), "NpyDataset: ", path, " holds no arrays");
    for (auto& [name, t] : arrays) fields.push_back(conventional_field(name, t, path));
  } else {
    for (const auto& [field, array] : field_arrays) {
      auto it = arrays.find(array);
      if (it == arrays.end()) {
        std::string have;
        for (const auto& [name, t] : arrays) have += (have.empty() ? "" : ", ") + name;
        throw Error(cat("NpyDataset: ", path, " has no array '", array, "' (for field '", field,
                        "'); it holds: ", have));
      }
      fields.push_back(conventional_field(field, it->second, cat(path, ":", array)));
    }
  }
  return NpyDataset(cat("npz (", path, ")"), std::move(fields), num_classes);
}

}  // namespace deep500::training
