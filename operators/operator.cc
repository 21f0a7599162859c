#include "operators/operator.h"

#include <cstring>

namespace deep500::ops {

void Operator::backward(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor>,
                        std::span<Tensor>) {
  throw Error("this operator has no backward implementation");
}

Tensor& ensure_output(std::span<Tensor> outputs, size_t i, DataType dtype, const Shape& shape) {
  DEEP500_CHECK(i < outputs.size(), "operator output #", i, " requested but the node has only ",
                outputs.size(), " output slot(s)");
  Tensor& t = outputs[i];
  if (!t.defined() || t.dtype() != dtype || t.shape() != shape) t = Tensor(dtype, shape);
  return t;
}

Tensor& zeroed_output(std::span<Tensor> outputs, size_t i, DataType dtype, const Shape& shape) {
  Tensor& t = ensure_output(outputs, i, dtype, shape);
  if (t.nbytes() > 0) std::memset(t.raw(), 0, t.nbytes());
  return t;
}

}  // namespace deep500::ops
