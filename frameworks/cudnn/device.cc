#include "frameworks/cudnn/device.h"

#include <utility>

namespace deep500::cudnn {

const DeviceInfo& device_info() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      d.reason = cat(cudaGetErrorString(e), " (cudaGetDeviceCount: ", cudaGetErrorName(e), ")");
      (void)cudaGetLastError();  // clear the sticky error for later callers
    } else if (n <= 0) {
      d.reason = "cudaGetDeviceCount reported 0 devices";
    } else {
      d.count = n;
    }
    return d;
  }();
  return info;
}

bool has_device() {
  return device_info().count > 0;
}

namespace {

// One handle per thread; destroyed when the thread ends (errors ignored: at
// process exit the CUDA context may already be gone).
struct ThreadHandle {
  cudnnHandle_t h = nullptr;
  std::string error;
  bool tried = false;
  ~ThreadHandle() {
    if (h) cudnnDestroy(h);
  }
};
thread_local ThreadHandle tls_handle;

ThreadHandle& thread_handle() {
  ThreadHandle& t = tls_handle;
  if (!t.tried) {
    t.tried = true;
    cudaError_t e = cudaSetDevice(0);
    if (e != cudaSuccess) {
      t.error = cat("cudaSetDevice(0): ", cudaGetErrorString(e));
      return t;
    }
    cudnnStatus_t s = cudnnCreate(&t.h);
    if (s != CUDNN_STATUS_SUCCESS) {
      t.h = nullptr;
      t.error = cat("cudnnCreate: ", cudnnGetErrorString(s));
    }
  }
  return t;
}

}  // namespace

std::optional<Refusal> device_refusal() {
  const DeviceInfo& d = device_info();
  if (d.count == 0) return refuse("no CUDA device: " + d.reason);
  ThreadHandle& t = thread_handle();
  if (!t.h) return refuse("cuDNN unavailable: " + t.error);
  return std::nullopt;
}

cudnnHandle_t handle() {
  DEEP500_CHECK(has_device(), "cudnn: no CUDA device: ", device_info().reason);
  ThreadHandle& t = thread_handle();
  DEEP500_CHECK(t.h, "cudnn: ", t.error);
  return t.h;
}

std::string cudnn_version() {
  size_t v = cudnnGetVersion();  // 91900 = 9.19.0
  return cat(v / 10000, ".", (v % 10000) / 100, ".", v % 100);
}

std::string cudart_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return "unknown";
  return cat(v / 1000, ".", (v % 1000) / 10);
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(cat("cudnn backend: ", what, " failed: ", cudaGetErrorString(status)));
}

void check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw Error(cat("cudnn backend: ", what, " failed: ", cudnnGetErrorString(status)));
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) {
  reserve(bytes);
}

DeviceBuffer::~DeviceBuffer() {
  release();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (ptr_) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

void DeviceBuffer::reserve(std::size_t bytes) {
  if (bytes <= bytes_) return;
  release();
  if (bytes == 0) return;
  check(cudaMalloc(&ptr_, bytes), "cudaMalloc");
  bytes_ = bytes;
}

void DeviceBuffer::upload(const Tensor& t) {
  DEEP500_CHECK(t.nbytes() <= bytes_, "cudnn backend: upload of ", t.nbytes(),
                " bytes into a device buffer of ", bytes_);
  if (t.nbytes())
    check(cudaMemcpy(ptr_, t.raw(), t.nbytes(), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
}

void DeviceBuffer::download(Tensor& t) const {
  DEEP500_CHECK(t.nbytes() <= bytes_, "cudnn backend: download of ", t.nbytes(),
                " bytes from a device buffer of ", bytes_);
  if (t.nbytes())
    check(cudaMemcpy(t.raw(), ptr_, t.nbytes(), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
}

void DeviceBuffer::zero() {
  if (bytes_) check(cudaMemset(ptr_, 0, bytes_), "cudaMemset");
}

DeviceBuffer to_device(const Tensor& t) {
  DeviceBuffer b(t.nbytes());
  b.upload(t);
  return b;
}

}  // namespace deep500::cudnn
