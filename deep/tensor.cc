#include "deep/tensor.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "deep/device_runtime.h"
#include "deep/mapping_cache.h"
#include "deep/sizes.h"

namespace deep500 {

std::string to_string(const TensorDesc& d) {
  return std::string(name_of(d.dtype)) + to_string(d.shape);
}

namespace {

// Buffers of 4 MiB and more (activations of real networks) are aligned to
// 2 MiB and marked for transparent huge pages: streaming kernels (pooling,
// concat, 1x1 convolutions) then take far fewer TLB misses; SqueezeNet at
// batch 16 runs ~10% faster. The rounding wastes less than a third.
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kHugeFrom = std::size_t{4} << 20;
// Buffers of 128 KiB and more (glibc's initial mmap threshold) are mapped
// from the kernel and unmapped when freed. Through malloc, freeing them
// raised glibc's dynamic mmap threshold (to 606 KB on ViT-B/16's planning
// run), after which the same sizes stayed in its heap as holes: ViT-B/16
// peaked at 943 MB resident for 711 MB live (mapped: 730 MB). A freed
// mapping is kept for the next buffer of its length (deep/mapping_cache.h)
// and zeroed when reused; a new mapping is already zero. Not under
// AddressSanitizer, which checks malloc'd buffers only.
constexpr std::size_t kMapFrom = std::size_t{128} << 10;
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMapLarge = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kMapLarge = false;
#else
constexpr bool kMapLarge = true;
#endif
#else
constexpr bool kMapLarge = true;
#endif

// `size` bytes, zeroed, 2 MiB-aligned from kHugeFrom; sets *mapped to the
// mapping's length (0: from malloc, *alloc bytes to zero).
unsigned char* allocate(std::size_t size, std::size_t* alloc, std::size_t* mapped) {
  const std::size_t align = size >= kHugeFrom ? kHugePage : 64;
  *alloc = std::max<std::size_t>(align, (size + align - 1) / align * align);
  *mapped = 0;
  if (kMapLarge && size >= kMapFrom) {
    if (void* held = mapping_cache::take(*alloc)) {
      std::memset(held, 0, *alloc);
      *mapped = *alloc;
      return static_cast<unsigned char*>(held);
    }
    const std::size_t length = *alloc + (align == kHugePage ? kHugePage : 0);
    void* m = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    auto* base = static_cast<unsigned char*>(m);
    auto* p = base;
    if (align == kHugePage) {  // keep the 2 MiB-aligned part
      const auto addr = reinterpret_cast<std::uintptr_t>(base);
      p = base + ((kHugePage - addr % kHugePage) % kHugePage);
      if (p > base) munmap(base, static_cast<std::size_t>(p - base));
      const std::size_t tail = length - static_cast<std::size_t>(p - base) - *alloc;
      if (tail > 0) munmap(p + *alloc, tail);
#ifdef MADV_HUGEPAGE
      madvise(p, *alloc, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
    }
    *mapped = *alloc;
    return p;
  }
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(align, *alloc));
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (align == kHugePage) madvise(p, *alloc, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return p;
}

}  // namespace

Tensor::Storage::Storage(DataType t, int64_t n, const Shape& shape) : dtype(t), count(n) {
  const std::string what = cat("tensor ", name_of(t), to_string(shape));
  const auto size =
      static_cast<std::size_t>(checked_mul(n, static_cast<int64_t>(size_of(t)), what));
  try {
    reserve_memory(size, what);
  } catch (const Error&) {
    if (mapping_cache::release_all() == 0) throw;
    reserve_memory(size, what);  // without the held mappings
  }
  std::size_t alloc = 0;
  try {
    try {
      bytes = allocate(size, &alloc, &mapped);
    } catch (const std::bad_alloc&) {
      if (mapping_cache::release_all() == 0) throw;
      bytes = allocate(size, &alloc, &mapped);  // without the held mappings
    }
  } catch (const std::bad_alloc&) {
    release_memory(size);
    throw Error(cat(what, ": the system refused ", format_bytes(size), " of memory"));
  }
  reserved = size;
  if (t == DataType::String) {
    for (int64_t i = 0; i < n; ++i) new (bytes + i * sizeof(std::string)) std::string();
  } else if (!mapped) {
    std::memset(bytes, 0, alloc);
  }
}

Tensor::Storage::Storage(DataType t, int64_t n, const Shape& shape, Device d, bool zero)
    : dtype(t), count(n), device(d) {
  const std::string what = cat("tensor ", name_of(t), to_string(shape));
  DEEP500_CHECK(t != DataType::String, what, ": string tensors live on the host only");
  const auto size =
      static_cast<std::size_t>(checked_mul(n, static_cast<int64_t>(size_of(t)), what));
  DeviceRuntime& rt = device_runtime(d);
  bytes = static_cast<unsigned char*>(rt.allocate(d.index, size, what));
  if (zero && size) rt.zero(d.index, bytes, size);
}

Tensor::Storage::Storage(DataType t, int64_t n, unsigned char* external)
    : bytes(external), dtype(t), count(n), owned(false) {}

Tensor::Storage::~Storage() {
  if (!owned) return;
  if (!device.is_host()) {
    try {
      device_runtime(device).deallocate(device.index, bytes);
    } catch (...) {  // a destructor does not throw; the block stays with its allocator
    }
    return;
  }
  release_memory(reserved);
  if (dtype == DataType::String) {
    auto* s = reinterpret_cast<std::string*>(bytes);
    for (int64_t i = 0; i < count; ++i) s[i].~basic_string();
  }
  if (mapped)
    mapping_cache::give(bytes, mapped);
  else
    std::free(bytes);
}

namespace {
// The element count of a new tensor; throws Error for an undefined type or
// a negative dimension.
int64_t new_tensor_numel(DataType dtype, const Shape& shape) {
  DEEP500_CHECK(dtype != DataType::Undefined, "cannot create a tensor of undefined element type");
  for (auto d : shape)
    DEEP500_CHECK(d >= 0, "negative dimension in tensor shape ", to_string(shape));
  return numel(shape);
}
}  // namespace

Tensor::Tensor(DataType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  numel_ = new_tensor_numel(dtype_, shape_);
  storage_ = std::make_shared<Storage>(dtype_, numel_, shape_);
}

Tensor::Tensor(DataType dtype, Shape shape, Device device)
    : dtype_(dtype), shape_(std::move(shape)) {
  numel_ = new_tensor_numel(dtype_, shape_);
  if (device.is_host())
    storage_ = std::make_shared<Storage>(dtype_, numel_, shape_);
  else
    storage_ = std::make_shared<Storage>(dtype_, numel_, shape_, device, true);
}

Tensor Tensor::uninitialized(DataType dtype, Shape shape, Device device) {
  if (device.is_host()) return Tensor(dtype, std::move(shape));
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = new_tensor_numel(dtype, t.shape_);
  t.storage_ = std::make_shared<Storage>(dtype, t.numel_, t.shape_, device, false);
  return t;
}

void Tensor::throw_not_on_host() const {
  throw Error(cat("tensor ", to_string(desc()), " is on ", deep500::to_string(device()),
                  ": copy it to the host first (Tensor::to)"));
}

Tensor Tensor::borrow(DataType dtype, Shape shape, const void* data) {
  DEEP500_CHECK(dtype != DataType::String && dtype != DataType::Undefined,
                "Tensor::borrow: only numeric and bool tensors can borrow memory");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  for (auto d : t.shape_)
    DEEP500_CHECK(d >= 0, "negative dimension in tensor shape ", deep500::to_string(t.shape_));
  t.numel_ = deep500::numel(t.shape_);
  // The storage never frees or writes `data`; the const_cast only lets the
  // tensor type hold it.
  t.storage_ = std::make_shared<Storage>(dtype, t.numel_,
                                         static_cast<unsigned char*>(const_cast<void*>(data)));
  return t;
}

void Tensor::check_type(DataType want) const {
  DEEP500_CHECK(want == dtype_, "tensor element type is ", name_of(dtype_), ", accessed as ",
                name_of(want));
}

double Tensor::at_as_double(int64_t i) const {
  DEEP500_CHECK(i >= 0 && i < numel_, "element index ", i, " out of range for ", numel_,
                " elements");
  if (dtype_ == DataType::Bool) return static_cast<const bool*>(raw())[i] ? 1.0 : 0.0;
  return dispatch_numeric(dtype_, [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    return static_cast<double>(static_cast<const T*>(raw())[i]);
  });
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  dispatch_integer(
      dtype_,
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = static_cast<const T*>(raw());
        for (int64_t i = 0; i < numel_; ++i) v[i] = static_cast<int64_t>(p[i]);
      },
      "integer tensor");
  return v;
}

std::vector<double> Tensor::to_double_vector() const {
  std::vector<double> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[i] = at_as_double(i);
  return v;
}

Tensor Tensor::view(Shape new_shape) const {
  DEEP500_CHECK(deep500::numel(new_shape) == numel_, "cannot view a tensor of shape ",
                deep500::to_string(shape_), " as ", deep500::to_string(new_shape),
                " (element counts differ)");
  Tensor t = *this;
  t.shape_ = std::move(new_shape);
  return t;
}

Tensor Tensor::slice(int64_t begin, int64_t end) const {
  DEEP500_CHECK(rank() >= 1 && begin >= 0 && begin <= end && end <= shape_[0], "slice [", begin,
                ",", end, ") out of range for shape ", deep500::to_string(shape_));
  Tensor t = *this;
  int64_t row = shape_[0] == 0 ? 0 : numel_ / shape_[0];
  t.shape_[0] = end - begin;
  t.numel_ = row * (end - begin);
  t.offset_ += static_cast<std::size_t>(begin * row) * size_of(dtype_);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_, device());
  t.copy_from(*this);
  return t;
}

Tensor Tensor::to(Device d) const {
  if (!defined() || device() == d) return *this;
  Tensor t(dtype_, shape_, d);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  DEEP500_CHECK(src.dtype_ == dtype_ && src.numel_ == numel_, "copy_from: source ",
                to_string(src.desc()), " does not match destination ", to_string(desc()));
  if (!on_host() || !src.on_host()) {
    if (address() == src.address() && device() == src.device()) return;
    const Device on = on_host() ? src.device() : device();
    const auto t0 = std::chrono::steady_clock::now();
    device_runtime(on).copy(address(), device(), src.address(), src.device(), nbytes());
    record_transfer(device(), src.device(), nbytes(),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return;
  }
  if (dtype_ == DataType::String) {
    auto* d = static_cast<std::string*>(raw());
    const auto* s = static_cast<const std::string*>(src.raw());
    for (int64_t i = 0; i < numel_; ++i) d[i] = s[i];
  } else if (raw() != src.raw()) {
    std::memmove(raw(), src.raw(), nbytes());
  }
}

namespace {
template <class To>
To from_string(const std::string& s) {
  if constexpr (std::is_same_v<To, bool>) {
    return !(s.empty() || s == "0" || s == "false" || s == "False");
  } else if constexpr (std::is_integral_v<To>) {
    return static_cast<To>(std::strtoll(s.c_str(), nullptr, 10));
  } else {
    return To(static_cast<float>(std::strtod(s.c_str(), nullptr)));
  }
}

template <class From>
std::string to_text(From v) {
  if constexpr (std::is_same_v<From, bool>) {
    return v ? "1" : "0";
  } else if constexpr (std::is_integral_v<From>) {
    return std::to_string(v);
  } else {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v)));
    return buf;
  }
}
}  // namespace

Tensor Tensor::cast(DataType to) const {
  Tensor out(to, shape_);
  dispatch_all(dtype_, [&](auto from_tag) {
    using F = typename decltype(from_tag)::type;
    const F* s = static_cast<const F*>(raw());
    dispatch_all(to, [&](auto to_tag) {
      using T = typename decltype(to_tag)::type;
      T* d = out.data<T>();
      for (int64_t i = 0; i < numel_; ++i) {
        if constexpr (std::is_same_v<F, std::string> && std::is_same_v<T, std::string>) {
          d[i] = s[i];
        } else if constexpr (std::is_same_v<F, std::string>) {
          d[i] = from_string<T>(s[i]);
        } else if constexpr (std::is_same_v<T, std::string>) {
          d[i] = to_text(s[i]);
        } else if constexpr (std::is_same_v<T, bool>) {
          d[i] = static_cast<double>(s[i]) != 0.0;
        } else if constexpr (std::is_same_v<F, Half> || std::is_same_v<F, BFloat16>) {
          d[i] = saturate_cast<T>(static_cast<float>(s[i]));
        } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
          d[i] = T(static_cast<float>(s[i]));
        } else {
          d[i] = saturate_cast<T>(s[i]);
        }
      }
    });
  });
  return out;
}

}  // namespace deep500
