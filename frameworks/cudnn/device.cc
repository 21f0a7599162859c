#include "frameworks/cudnn/device.h"

#include <atomic>
#include <utility>

#include "operators/operator.h"

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
      note_device_runtime_started();  // a CUDA context may exist from here on
    }
    return d;
  }();
  return info;
}

bool has_device() {
  return device_info().count > 0;
}

namespace {

std::atomic<bool> g_tf32{false};
std::atomic<bool> g_benchmark{true};

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
    cudaError_t e = cudaSetDevice(backend_device().index);
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

bool tf32_math() {
  return g_tf32.load();
}

void set_math(const std::string& value) {
  DEEP500_CHECK(value == "fp32" || value == "tf32", "cuda.math: expected fp32 or tf32, got '",
                value, "'");
  g_tf32.store(value == "tf32");
}

std::string math_setting() {
  return tf32_math() ? "tf32" : "fp32";
}

bool benchmark_conv_algorithms() {
  return g_benchmark.load();
}

void set_conv_algorithm(const std::string& value) {
  DEEP500_CHECK(value == "benchmark" || value == "heuristic",
                "cudnn.conv_algorithm: expected benchmark or heuristic, got '", value, "'");
  g_benchmark.store(value == "benchmark");
}

std::string conv_algorithm_setting() {
  return benchmark_conv_algorithms() ? "benchmark" : "heuristic";
}

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
  check(cudnnSetStream(t.h, static_cast<cudaStream_t>(current_stream(backend_device()))),
        "cudnnSetStream");
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

DeviceCall::DeviceCall(std::span<const Tensor> inputs)
    : resident_(!inputs.empty() && inputs[0].defined() && inputs[0].device() == backend_device()) {}

const float* DeviceCall::in(const Tensor& t) {
  if (t.device() == backend_device()) return static_cast<const float*>(t.address());
  DEEP500_CHECK(t.on_host(), "cudnn backend: a tensor on ", to_string(t.device()),
                " given to a kernel on ", to_string(backend_device()));
  Tensor copy = Tensor::uninitialized(t.dtype(), t.shape(), backend_device());
  copy.copy_from(t);
  keep_.push_back(copy);
  return static_cast<const float*>(copy.address());
}

float* DeviceCall::out(std::span<Tensor> slots, size_t i, const Shape& shape, bool zeroed) {
  if (resident_) {
    Tensor& t = zeroed ? ops::zeroed_output(slots, i, DataType::Float, shape, backend_device())
                       : ops::ensure_output(slots, i, DataType::Float, shape, backend_device());
    return static_cast<float*>(t.address());
  }
  Tensor& slot = ops::ensure_output(slots, i, DataType::Float, shape);
  Tensor d = zeroed ? Tensor(DataType::Float, shape, backend_device())
                    : Tensor::uninitialized(DataType::Float, shape, backend_device());
  staged_.push_back({&slot, d});
  return static_cast<float*>(d.address());
}

float* DeviceCall::temp(int64_t count) {
  keep_.push_back(Tensor::uninitialized(DataType::Float, {count}, backend_device()));
  return static_cast<float*>(keep_.back().address());
}

void DeviceCall::finish() {
  for (auto& s : staged_) s.slot->copy_from(s.on_device);
  staged_.clear();
}

void* Workspace::get(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  if (!bytes_.defined() || bytes_.nbytes() < bytes)
    bytes_ =
        Tensor::uninitialized(DataType::UInt8, {static_cast<int64_t>(bytes)}, backend_device());
  return bytes_.address();
}

}  // namespace deep500::cudnn
