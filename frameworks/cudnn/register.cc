#include "frameworks/cudnn/register.h"

#include "frameworks/cudnn/common.h"
#include "frameworks/cudnn/cuda_runtime.h"

namespace deep500::cudnn {

void register_kernels(ops::Registry& r) {
  register_device_runtime(Device::Kind::Cuda, &cuda_runtime());
  register_conv(r);
  register_activations(r);
  register_pool(r);
  register_softmax(r);
  register_batchnorm(r);
  register_gemm(r);
  r.add_library("cudnn", cudnn_version());
  r.add_library("cuda_runtime", cudart_version());
  ops::BackendCapabilities caps;
  caps.device = backend_device();
  r.set_capabilities("cudnn", caps);
  r.add_setting({"cuda.math",
                 "float32 math of cuDNN convolutions and cuBLAS GEMMs: fp32 (FMA, matches the "
                 "reference) or tf32 (tensor cores)",
                 [] { return math_setting(); }, [](const std::string& v) { set_math(v); }});
  r.add_setting({"cudnn.conv_algorithm",
                 "how a convolution's algorithms are chosen, once per configuration: benchmark "
                 "(cudnnFind* times them, like PyTorch's cudnn.benchmark) or heuristic (cuDNN's "
                 "ranking)",
                 [] { return conv_algorithm_setting(); },
                 [](const std::string& v) { set_conv_algorithm(v); }});
}

}  // namespace deep500::cudnn
