// Tensor: an owning (shared), 64-byte-aligned, row-major buffer with an
// element type and a shape. Copies share storage (like a handle); clone()
// copies the data. view()/slice() are zero-copy views of the same storage.
//
// Storage lives on a device (deep/device.h): the host by default, or a CUDA
// device, allocated through that device's runtime (deep/device_runtime.h:
// its caching allocator, in the order of the thread's current stream).
// Host access (raw(), data<T>(), at_as_double, ...) to a device tensor
// throws Error; address() is the bytes' address on their device, for
// device kernels. Copies between devices are explicit (to(), copy_from())
// and counted (transfer_stats()).
//
// Threading: a Tensor may be read from many threads; writes need external
// synchronisation. Strings are stored as constructed std::string objects.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "deep/device.h"
#include "deep/dtype.h"
#include "deep/shape.h"

namespace deep500 {

struct TensorDesc {
  DataType dtype = DataType::Undefined;
  Shape shape;
  bool operator==(const TensorDesc&) const = default;
};
std::string to_string(const TensorDesc& d);  // "float32[2,3]"

class Tensor {
 public:
  Tensor() = default;                   // undefined (an absent optional input)
  Tensor(DataType dtype, Shape shape);  // zero-initialised, on the host
  // Zero-initialised on `device` (not String); throws Error when the device
  // cannot be used or its memory does not fit the request.
  Tensor(DataType dtype, Shape shape, Device device);
  // On `device` with undefined contents, for a kernel that writes every
  // element (a device allocation then costs no memset); on the host the
  // same as the constructor.
  static Tensor uninitialized(DataType dtype, Shape shape, Device device);
  // A tensor over memory it does not own (e.g. a loaded model's raw data):
  // the owner keeps `data` alive longer than every copy and view of the
  // result, and nobody writes through it. Not for String tensors.
  static Tensor borrow(DataType dtype, Shape shape, const void* data);
  explicit Tensor(const TensorDesc& d) : Tensor(d.dtype, d.shape) {}

  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  template <class T>
  static Tensor scalar(T value) {
    return from_vector<T>({}, {value});
  }

  bool defined() const { return storage_ != nullptr; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  TensorDesc desc() const { return {dtype_, shape_}; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_.at(static_cast<size_t>(i < 0 ? i + rank() : i)); }
  int64_t numel() const { return numel_; }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel_) * size_of(dtype_); }

  // Where the storage lives (the host for an undefined tensor).
  Device device() const { return storage_ ? storage_->device : Device::host(); }
  bool on_host() const { return device().is_host(); }

  // Host bytes; throws Error for a tensor on a device.
  void* raw() {
    check_on_host();
    return address();
  }
  const void* raw() const {
    check_on_host();
    return address();
  }
  // The bytes' address on their device (a device pointer for a device
  // tensor): for kernels of that device only.
  void* address() { return storage_ ? storage_->bytes + offset_ : nullptr; }
  const void* address() const { return storage_ ? storage_->bytes + offset_ : nullptr; }
  // Typed access; throws Error when T does not match dtype().
  template <class T>
  T* data() {
    check_type(dtype_v<T>);
    return static_cast<T*>(raw());
  }
  template <class T>
  const T* data() const {
    check_type(dtype_v<T>);
    return static_cast<const T*>(raw());
  }
  // Element i converted to double (numeric and bool only).
  double at_as_double(int64_t i) const;
  // Converts to int64 values (integer tensors; used for shape-like inputs).
  std::vector<int64_t> to_int64_vector() const;
  std::vector<double> to_double_vector() const;

  Tensor view(Shape new_shape) const;              // zero-copy reshape; numel must match
  Tensor slice(int64_t begin, int64_t end) const;  // zero-copy rows [begin,end) of dim 0
  Tensor clone() const;                            // deep copy, on the same device
  Tensor cast(DataType to) const;                  // converted copy (host; numeric, bool, string)
  // Same dtype and numel required; between any two devices (counted).
  void copy_from(const Tensor& src);
  // This tensor on `d`: itself when it is there already, else a copy
  // (counted in transfer_stats()).
  Tensor to(Device d) const;
  bool shares_storage(const Tensor& o) const { return storage_ == o.storage_; }
  bool borrowed() const { return storage_ && !storage_->owned; }  // see borrow()

 private:
  struct Storage {
    // Counts its bytes against the memory budget (deep/sizes.h); the error
    // when they do not fit names the tensor's type and shape.
    Storage(DataType t, int64_t n, const Shape& shape);
    Storage(DataType t, int64_t n, const Shape& shape, Device d, bool zero);  // on a device
    Storage(DataType t, int64_t n, unsigned char* external);                  // not owned
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
    unsigned char* bytes = nullptr;
    DataType dtype;
    int64_t count;
    bool owned = true;
    std::size_t reserved = 0;  // bytes counted against the memory budget
    std::size_t mapped = 0;    // > 0: an mmap of this many bytes (large buffers)
    Device device;             // where `bytes` are
  };
  void check_type(DataType want) const;
  void check_on_host() const {
    if (storage_ && !storage_->device.is_host()) throw_not_on_host();
  }
  [[noreturn]] void throw_not_on_host() const;

  DataType dtype_ = DataType::Undefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<Storage> storage_;
  std::size_t offset_ = 0;  // bytes
};

template <class T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t(dtype_v<T>, std::move(shape));
  DEEP500_CHECK(static_cast<int64_t>(values.size()) == t.numel(),
                "Tensor::from_vector: ", values.size(), " values given for shape ",
                to_string(t.shape()), " (expected ", t.numel(), ")");
  T* d = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) d[i] = values[i];
  return t;
}

// The description of each tensor; an undefined one (an absent optional
// input) gives an empty TensorDesc.
inline std::vector<TensorDesc> descs_of(std::span<const Tensor> ts) {
  std::vector<TensorDesc> d;
  d.reserve(ts.size());
  for (const auto& t : ts) d.push_back(t.defined() ? t.desc() : TensorDesc{});
  return d;
}

}  // namespace deep500
