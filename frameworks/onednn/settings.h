// Typed settings of the oneDNN backend. Declared to the registry as
// "onednn.direct_loops" and "onednn.bn_backward_layout" (register.cc), so
// they are set by name (deep500 --setting) and recorded in every result;
// frameworks/settings.cc fills them from the environment at start-up. Set
// them before kernels are created: plans already built keep their choice.
#pragma once

#include <string>

namespace deep500::onednn {

struct Settings {
  // Kernels may use their plain-loop paths instead of oneDNN primitives
  // (BatchNormalization training, max pooling without pads, 1-D and 2-D
  // linear Resize forward); false gives the primitives for A/B measurements.
  bool direct_loops = true;
  // BatchNormalization training backward with the forward's statistics:
  // "direct" (plain loops over NCHW) or the oneDNN primitive in layout
  // "nchw", "nhwc" or "nChw16c" (X and dY reordered in, dX out).
  std::string bn_backward_layout = "direct";
};

Settings& settings();

}  // namespace deep500::onednn
