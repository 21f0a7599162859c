#include "deep/onnx_tensor.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "deep/sizes.h"

namespace deep500 {

namespace {

DataType checked_dtype(int code, const std::string& what) {
  switch (code) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 8:
    case 9:
    case 10:
    case 11:
    case 12:
    case 13:
    case 16: return static_cast<DataType>(code);
    default:
      throw Error(cat(what, ": unsupported tensor element type code ", code,
                      " (complex types are not supported)"));
  }
}

template <class T, class Field>
void copy_field(Tensor& t, const Field& field, const std::string& what, const char* fname) {
  DEEP500_CHECK(field.size() == t.numel(), what, ": field ", fname, " holds ", field.size(),
                " values, expected ", t.numel(), " for shape ", to_string(t.shape()));
  T* d = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = static_cast<T>(field.Get(static_cast<int>(i)));
}

}  // namespace

Tensor from_onnx(const onnx::TensorProto& p, const std::string& what) {
  DEEP500_CHECK(p.data_location() != onnx::TensorProto::EXTERNAL, what,
                ": tensor data stored externally is not supported");
  DataType dt = checked_dtype(p.data_type(), what);
  Shape shape(p.dims().begin(), p.dims().end());
  const int64_t n = checked_numel(shape, what);
  // The bytes present are checked against the dims before anything is allocated.
  if (p.has_raw_data() && dt != DataType::String) {
    const auto want =
        static_cast<uint64_t>(checked_mul(n, static_cast<int64_t>(size_of(dt)), what));
    DEEP500_CHECK(p.raw_data().size() == want, what, ": raw_data holds ", p.raw_data().size(),
                  " bytes, expected ", want, " for ", name_of(dt), to_string(shape));
  }
  Tensor t(dt, shape);
  if (p.has_raw_data() && dt != DataType::String) {
    std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());  // little-endian host
    if (dt == DataType::Bool) {  // a byte other than 0/1 is not a valid bool (fuzz finding)
      auto* bytes = static_cast<unsigned char*>(t.raw());
      for (int64_t i = 0; i < n; ++i) bytes[i] = bytes[i] != 0;
    }
    return t;
  }
  switch (dt) {
    case DataType::Float: copy_field<float>(t, p.float_data(), what, "float_data"); break;
    case DataType::Double: copy_field<double>(t, p.double_data(), what, "double_data"); break;
    case DataType::Int64: copy_field<int64_t>(t, p.int64_data(), what, "int64_data"); break;
    case DataType::UInt32: copy_field<uint32_t>(t, p.uint64_data(), what, "uint64_data"); break;
    case DataType::UInt64: copy_field<uint64_t>(t, p.uint64_data(), what, "uint64_data"); break;
    case DataType::Int32: copy_field<int32_t>(t, p.int32_data(), what, "int32_data"); break;
    case DataType::Int16: copy_field<int16_t>(t, p.int32_data(), what, "int32_data"); break;
    case DataType::Int8: copy_field<int8_t>(t, p.int32_data(), what, "int32_data"); break;
    case DataType::UInt16: copy_field<uint16_t>(t, p.int32_data(), what, "int32_data"); break;
    case DataType::UInt8: copy_field<uint8_t>(t, p.int32_data(), what, "int32_data"); break;
    case DataType::Bool: copy_field<bool>(t, p.int32_data(), what, "int32_data"); break;
    case DataType::Float16:
    case DataType::BFloat16: {
      DEEP500_CHECK(p.int32_data_size() == n, what, ": int32_data holds ", p.int32_data_size(),
                    " values, expected ", n);
      auto* d = static_cast<uint16_t*>(t.raw());
      for (int64_t i = 0; i < n; ++i)
        d[i] = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
      break;
    }
    case DataType::String: {
      DEEP500_CHECK(p.string_data_size() == n, what, ": string_data holds ", p.string_data_size(),
                    " values, expected ", n);
      auto* d = t.data<std::string>();
      for (int64_t i = 0; i < n; ++i) d[i] = p.string_data(static_cast<int>(i));
      break;
    }
    default: throw Error(cat(what, ": unsupported element type"));
  }
  return t;
}

Tensor view_onnx(const onnx::TensorProto& p, const std::string& what) {
  DataType dt = checked_dtype(p.data_type(), what);
  // Bool bytes are normalised to 0/1 on a copy; the others are viewed in place.
  if (!p.has_raw_data() || dt == DataType::String || dt == DataType::Bool ||
      p.data_location() == onnx::TensorProto::EXTERNAL)
    return from_onnx(p, what);
  const void* data = p.raw_data().data();
  if (reinterpret_cast<std::uintptr_t>(data) % size_of(dt) != 0) return from_onnx(p, what);
  Shape shape(p.dims().begin(), p.dims().end());
  for (auto d : shape) DEEP500_CHECK(d >= 0, what, ": negative dimension in ", to_string(shape));
  Tensor t = Tensor::borrow(dt, shape, data);
  DEEP500_CHECK(p.raw_data().size() == t.nbytes(), what, ": raw_data holds ", p.raw_data().size(),
                " bytes, expected ", t.nbytes(), " for ", to_string(t.desc()));
  return t;
}

onnx::TensorProto to_onnx(const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int>(t.dtype()));
  for (auto d : t.shape()) p.add_dims(d);
  if (t.dtype() == DataType::String) {
    const auto* s = t.data<std::string>();
    for (int64_t i = 0; i < t.numel(); ++i) p.add_string_data(s[i]);
  } else {
    p.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  }
  return p;
}

uint64_t regular_file_size(const std::string& path) {
  struct stat st {};
  DEEP500_CHECK(::stat(path.c_str(), &st) == 0, path, ": cannot open file (", std::strerror(errno),
                ")");
  DEEP500_CHECK(S_ISREG(st.st_mode), path, ": not a regular file (",
                S_ISDIR(st.st_mode) ? "a directory" : "a device, pipe or socket", ")");
  return static_cast<uint64_t>(st.st_size);
}

std::ifstream open_within_budget(const std::string& path, uint64_t& size) {
  size = regular_file_size(path);
  DEEP500_CHECK(size <= memory_budget(), path, ": ", format_bytes(size),
                " is more than the memory budget (", format_bytes(memory_budget()),
                "; setting memory.budget)");
  std::ifstream f(path, std::ios::binary);
  DEEP500_CHECK(f.good(), path, ": cannot open file");
  return f;
}

std::string read_file(const std::string& path) {
  uint64_t size = 0;
  std::ifstream f = open_within_budget(path, size);
  std::string bytes(size, '\0');
  f.read(bytes.data(), static_cast<std::streamsize>(size));
  DEEP500_CHECK(f.gcount() == static_cast<std::streamsize>(size), path, ": read ", f.gcount(),
                " of its ", size, " bytes");
  return bytes;
}

onnx::TensorProto read_tensor_proto(const std::string& path) {
  std::string bytes = read_file(path);
  onnx::TensorProto p;
  DEEP500_CHECK(p.ParseFromString(bytes), path, ": not a valid serialized onnx.TensorProto (",
                bytes.size(), " bytes; truncated or corrupt?)");
  return p;
}

}  // namespace deep500
