// One registration function per operator family (one .cc file each).
#pragma once

#include "operators/registry.h"

namespace deep500::reference {

void register_elementwise_binary(ops::Registry& r);
void register_activations(ops::Registry& r);
void register_rnn(ops::Registry& r);
void register_control_flow(ops::Registry& r);
void register_random(ops::Registry& r);
void register_signal(ops::Registry& r);
void register_misc(ops::Registry& r);
void register_training_ops(ops::Registry& r);

}  // namespace deep500::reference
