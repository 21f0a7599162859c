#include "frameworks/reference/register.h"

#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {

void register_kernels(ops::Registry& r) {
  register_elementwise_binary(r);
  register_activations(r);
  register_rnn(r);
  register_control_flow(r);
  register_random(r);
  register_signal(r);
  register_misc(r);
  register_training_ops(r);
}

}  // namespace deep500::reference
