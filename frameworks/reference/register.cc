#include "frameworks/reference/register.h"

#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {

void register_kernels(ops::Registry& r) {
  register_elementwise_binary(r);
  register_activations(r);
  register_unary_math(r);
  register_logical(r);
  register_variadic(r);
}

}  // namespace deep500::reference
