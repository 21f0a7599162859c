#include "training/data/hdf5_io.h"

#include <H5Cpp.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>

#include "deep/child_process.h"
#include "deep/error.h"
#include "deep/output_file.h"
#include "deep/sizes.h"

namespace deep500::training {
namespace {

std::mutex& hdf5_mutex() {
  static std::mutex m;
  return m;
}

// The messages of HDF5's error stack (innermost last), which say more than
// the exception text ("truncated file: eof = ...").
std::string error_stack() {
  std::vector<std::string> msgs;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
        if (e->desc != nullptr && *e->desc != '\0')
          static_cast<std::vector<std::string>*>(data)->push_back(e->desc);
        return 0;
      },
      &msgs);
  std::string s;
  for (const std::string& m : msgs) s += (s.empty() ? "" : "; ") + m;
  return s;
}

[[noreturn]] void throw_h5(const std::string& what, const H5::Exception& e) {
  std::string stack = error_stack();
  H5Eclear2(H5E_DEFAULT);
  throw Error(cat(what, ": ", e.getDetailMsg(), stack.empty() ? "" : " (", stack,
                  stack.empty() ? "" : ")"));
}

// Runs `f` under the HDF5 mutex with automatic error printing off; an
// H5::Exception becomes an Error starting with `what`.
template <class F>
auto guarded(const std::string& what, F&& f) -> decltype(f()) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  H5::Exception::dontPrint();
  try {
    return f();
  } catch (const H5::Exception& e) {
    throw_h5(what, e);
  }
}

// A read of a file that may be damaged. libhdf5 (1.10) itself can crash on
// corrupted files (fuzzing found a null read in H5Dread and a crash in
// H5A__close), so the read runs first in a child process: a crash there is
// an Error naming the file, and only a read that succeeded there runs here.
// The child is forked while this process holds the HDF5 mutex, so no other
// thread is inside libhdf5 and the child needs no lock.
constexpr double kProbeSeconds = 120;

template <class F>
auto guarded_read(const std::string& what, F&& f) -> decltype(f()) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  H5::Exception::dontPrint();
  auto attempt = [&] {
    try {
      return f();
    } catch (const H5::Exception& e) {
      throw_h5(what, e);
    }
  };
  // A child forked while another thread held a lock it then needs (a
  // sanitizer's allocator lock) waits for ever: the probe has a time limit,
  // and a probe that ran out of time is tried once more before the file is
  // called damaged.
  ChildResult probe;
  for (int tries = 0; tries < 2; ++tries) {
    probe = run_in_child(
        [&] {
          (void)attempt();
          return std::string();
        },
        kProbeSeconds);
    if (probe.completed || probe.threw_error || probe.failure.rfind("timed out", 0) != 0) break;
  }
  if (probe.threw_error) throw Error(probe.failure);
  DEEP500_CHECK(probe.completed, what, ": damaged: libhdf5 ", probe.failure, " reading it");
  return attempt();
}

const H5::PredType* h5_type(DataType t) {
  switch (t) {
    case DataType::Float: return &H5::PredType::NATIVE_FLOAT;
    case DataType::Double: return &H5::PredType::NATIVE_DOUBLE;
    case DataType::Int8: return &H5::PredType::NATIVE_INT8;
    case DataType::Int16: return &H5::PredType::NATIVE_INT16;
    case DataType::Int32: return &H5::PredType::NATIVE_INT32;
    case DataType::Int64: return &H5::PredType::NATIVE_INT64;
    case DataType::UInt8: return &H5::PredType::NATIVE_UINT8;
    case DataType::UInt16: return &H5::PredType::NATIVE_UINT16;
    case DataType::UInt32: return &H5::PredType::NATIVE_UINT32;
    case DataType::UInt64: return &H5::PredType::NATIVE_UINT64;
    default: return nullptr;
  }
}

// The element type to read a stored dataset as.
DataType stored_dtype(const H5::DataSet& ds, const std::string& where) {
  const H5T_class_t cls = ds.getTypeClass();
  if (cls == H5T_FLOAT) {
    const size_t size = ds.getFloatType().getSize();
    if (size == 4) return DataType::Float;
    if (size == 8) return DataType::Double;
    throw Error(cat(where, ": unsupported float size ", size, " bytes (expected 4 or 8)"));
  }
  if (cls == H5T_INTEGER) {
    const H5::IntType it = ds.getIntType();
    const bool is_signed = it.getSign() != H5T_SGN_NONE;
    switch (it.getSize()) {
      case 1: return is_signed ? DataType::Int8 : DataType::UInt8;
      case 2: return is_signed ? DataType::Int16 : DataType::UInt16;
      case 4: return is_signed ? DataType::Int32 : DataType::UInt32;
      case 8: return is_signed ? DataType::Int64 : DataType::UInt64;
      default: break;
    }
  }
  throw Error(cat(where, ": unsupported element type (expected a float32/64 or integer dataset)"));
}

H5::H5File open_for_read(const std::string& path) {
  DEEP500_CHECK(std::filesystem::exists(path), "HDF5 file ", path, " does not exist");
  htri_t is = H5Fis_hdf5(path.c_str());
  DEEP500_CHECK(is > 0, "HDF5 file ", path,
                ": not an HDF5 file (no HDF5 signature; expected a file written by HDF5)");
  return H5::H5File(path, H5F_ACC_RDONLY);
}

// The stored bytes of a compact or contiguous dataset agree with its
// dataspace and lie inside the file. libhdf5 itself trusts a compact
// dataset's size (a damaged one made H5Dread copy from a null pointer).
void check_storage(const H5::DataSet& ds, int64_t bytes, const std::string& path,
                   const std::string& where) {
  const hid_t plist = H5Dget_create_plist(ds.getId());
  const H5D_layout_t layout = H5Pget_layout(plist);
  H5Pclose(plist);
  const hsize_t stored = H5Dget_storage_size(ds.getId());
  if (layout == H5D_COMPACT) {
    DEEP500_CHECK(stored == static_cast<hsize_t>(bytes), where, ": damaged: compact storage of ",
                  stored, " bytes for ", bytes, " bytes of data");
  } else if (layout == H5D_CONTIGUOUS) {
    const haddr_t offset = H5Dget_offset(ds.getId());
    if (offset == HADDR_UNDEF) return;  // never written: reads as the fill value
    std::error_code ec;
    const uintmax_t file_size = std::filesystem::file_size(path, ec);
    DEEP500_CHECK(!ec && stored == static_cast<hsize_t>(bytes) && offset <= file_size &&
                      static_cast<uintmax_t>(bytes) <= file_size - offset,
                  where, ": damaged: ", bytes, " bytes of data stored as ", stored,
                  " bytes at offset ", offset, " of a ", file_size, "-byte file");
  }
}

Tensor read_dataset(const H5::H5File& file, const std::string& path, const std::string& name) {
  const std::string where = cat("HDF5 file ", path, ", dataset '", name, "'");
  try {
    H5::DataSet ds = file.openDataSet(name);
    const DataType dtype = stored_dtype(ds, where);
    H5::DataSpace space = ds.getSpace();
    const int rank = space.getSimpleExtentNdims();
    std::vector<hsize_t> dims(rank);
    if (rank > 0) space.getSimpleExtentDims(dims.data());
    const Shape shape(dims.begin(), dims.end());
    check_storage(
        ds, checked_mul(checked_numel(shape, where), static_cast<int64_t>(size_of(dtype)), where),
        path, where);
    Tensor t(dtype, shape);
    if (t.numel() > 0) ds.read(t.raw(), *h5_type(dtype));
    return t;
  } catch (const H5::Exception& e) {
    throw_h5(where, e);
  }
}

void visit_datasets(const H5::Group& g, const std::string& prefix,
                    const std::function<void(const std::string&)>& f) {
  const hsize_t n = g.getNumObjs();
  for (hsize_t i = 0; i < n; ++i) {
    const std::string name = g.getObjnameByIdx(i);
    const std::string full = prefix.empty() ? name : prefix + "/" + name;
    const H5O_type_t type = g.childObjType(name);
    if (type == H5O_TYPE_GROUP) {
      visit_datasets(g.openGroup(name), full, f);
    } else if (type == H5O_TYPE_DATASET) {
      f(full);
    }
  }
}

void write_dataset(H5::H5File& file, const std::string& path, const std::string& name,
                   const Tensor& t, const Hdf5WriteOptions& options) {
  const std::string where = cat("write_hdf5: ", path, ": dataset '", name, "'");
  DEEP500_CHECK(!name.empty() && name.front() != '/' && name.back() != '/', where,
                ": expected a name like \"w1\" or \"opt/m/w1\"");
  DEEP500_CHECK(t.defined(), where, ": tensor is undefined");
  const H5::PredType* type = h5_type(t.dtype());
  DEEP500_CHECK(type != nullptr, where, ": cannot store ", name_of(t.dtype()),
                " tensors (expected float32/64, int8..64 or uint8..64)");
  std::vector<hsize_t> dims(t.shape().begin(), t.shape().end());
  H5::DataSpace space = dims.empty() ? H5::DataSpace(H5S_SCALAR)
                                     : H5::DataSpace(static_cast<int>(dims.size()), dims.data());
  H5::DSetCreatPropList dcpl;
  if (!dims.empty() && t.numel() > 0) {
    const int64_t row_bytes = static_cast<int64_t>(t.nbytes()) / t.dim(0);
    std::vector<hsize_t> chunk = dims;
    chunk[0] = static_cast<hsize_t>(
        std::clamp<int64_t>(options.chunk_bytes / std::max<int64_t>(row_bytes, 1), 1, t.dim(0)));
    dcpl.setChunk(static_cast<int>(chunk.size()), chunk.data());
    if (options.gzip_level > 0) dcpl.setDeflate(std::min(options.gzip_level, 9));
  }
  try {
    H5::LinkCreatPropList lcpl;
    lcpl.setCreateIntermediateGroup(true);
    H5::DataSet ds =
        file.createDataSet(name, *type, space, dcpl, H5::DSetAccPropList::DEFAULT, lcpl);
    if (t.numel() > 0) ds.write(t.raw(), *type);
  } catch (const H5::Exception& e) {
    throw_h5(where, e);
  }
}

}  // namespace

void write_hdf5(const std::string& path, const std::map<std::string, Tensor>& tensors,
                const std::map<std::string, std::string>& attributes,
                const Hdf5WriteOptions& options) {
  const std::string tmp = output_temp_path(path);
  try {
    guarded(cat("write_hdf5: ", path), [&] {
      H5::H5File file(tmp, H5F_ACC_TRUNC);
      H5::Group root = file.openGroup("/");
      for (const auto& [key, value] : attributes) {
        H5::StrType st(H5::PredType::C_S1, std::max<size_t>(value.size(), 1));
        H5::Attribute a = root.createAttribute(key, st, H5::DataSpace(H5S_SCALAR));
        a.write(st, value.empty() ? std::string(1, '\0') : value);
      }
      for (const auto& [name, t] : tensors) write_dataset(file, path, name, t, options);
      file.close();
    });
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  install_output_file(tmp, path, "write_hdf5");
}

std::map<std::string, Tensor> read_hdf5(const std::string& path) {
  return guarded_read(cat("read_hdf5: HDF5 file ", path), [&] {
    H5::H5File file = open_for_read(path);
    std::map<std::string, Tensor> out;
    visit_datasets(file.openGroup("/"), "",
                   [&](const std::string& name) { out[name] = read_dataset(file, path, name); });
    return out;
  });
}

Tensor read_hdf5_dataset(const std::string& path, const std::string& name) {
  return guarded_read(cat("read_hdf5: HDF5 file ", path, ", dataset '", name, "'"), [&] {
    H5::H5File file = open_for_read(path);
    DEEP500_CHECK(file.nameExists(name), "HDF5 file ", path, " has no dataset '", name, "'");
    return read_dataset(file, path, name);
  });
}

std::map<std::string, std::string> read_hdf5_attributes(const std::string& path) {
  return guarded_read(cat("read_hdf5: HDF5 file ", path, ", attributes"), [&] {
    H5::H5File file = open_for_read(path);
    H5::Group root = file.openGroup("/");
    std::map<std::string, std::string> out;
    for (int i = 0; i < root.getNumAttrs(); ++i) {
      H5::Attribute a = root.openAttribute(static_cast<unsigned>(i));
      if (a.getTypeClass() != H5T_STRING) continue;
      std::string value;
      a.read(a.getStrType(), value);
      out[a.getName()] = value.c_str();  // fixed-length strings may carry padding NULs
    }
    return out;
  });
}

Hdf5Layout hdf5_layout(const std::string& path, const std::string& name) {
  return guarded_read(cat("HDF5 file ", path, ", dataset '", name, "'"), [&] {
    H5::H5File file = open_for_read(path);
    H5::DataSet ds = file.openDataSet(name);
    H5::DSetCreatPropList dcpl = ds.getCreatePlist();
    Hdf5Layout out;
    if (dcpl.getLayout() == H5D_CHUNKED) {
      const int rank = ds.getSpace().getSimpleExtentNdims();
      std::vector<hsize_t> chunk(rank);
      dcpl.getChunk(rank, chunk.data());
      out.chunk.assign(chunk.begin(), chunk.end());
    }
    for (int i = 0; i < dcpl.getNfilters(); ++i) {
      unsigned flags = 0;
      size_t nelmts = 0;
      unsigned config = 0;
      char fname[64];
      if (dcpl.getFilter(i, flags, nelmts, nullptr, sizeof fname, fname, config) ==
          H5Z_FILTER_DEFLATE)
        out.gzip = true;
    }
    return out;
  });
}

}  // namespace deep500::training
