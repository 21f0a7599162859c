#include "frameworks/reference/register.h"

#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {

void register_kernels(ops::Registry& r) {
  register_elementwise_binary(r);
  register_activations(r);
  register_gather_scatter(r);
  register_select(r);
  register_cumsum_reverse(r);
  register_resize(r);
  register_grid_roi(r);
}

}  // namespace deep500::reference
