#include "operators/operator.h"

#include <cstring>

#include "deep/device_runtime.h"

namespace deep500::ops {

void Operator::backward(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor>,
                        std::span<Tensor>) {
  throw Error("this operator has no backward implementation");
}

Tensor& ensure_output(std::span<Tensor> outputs, size_t i, DataType dtype, const Shape& shape,
                      Device device) {
  DEEP500_CHECK(i < outputs.size(), "operator output #", i, " requested but the node has only ",
                outputs.size(), " output slot(s)");
  Tensor& t = outputs[i];
  if (!t.defined() || t.dtype() != dtype || t.shape() != shape || t.device() != device)
    t = Tensor(dtype, shape, device);
  return t;
}

Tensor& zeroed_output(std::span<Tensor> outputs, size_t i, DataType dtype, const Shape& shape,
                      Device device) {
  Tensor& t = ensure_output(outputs, i, dtype, shape, device);
  if (t.nbytes() == 0) return t;
  if (device.is_host())
    std::memset(t.raw(), 0, t.nbytes());
  else
    device_runtime(device).zero(device.index, t.address(), t.nbytes());
  return t;
}

}  // namespace deep500::ops
