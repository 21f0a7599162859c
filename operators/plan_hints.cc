#include "operators/plan_hints.h"

#include <algorithm>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::ops::hints {

const std::vector<std::string>& post_activation_names() {
  static const std::vector<std::string> names = {"relu",     "clip",     "linear",    "logistic",
                                                 "tanh",     "elu",      "hardswish", "swish",
                                                 "gelu_erf", "soft_relu"};
  return names;
}

std::vector<PostActivation> post_activations(const NodeSpec& node) {
  const auto names = node.attributes.get_strings(kPostEltwise, {});
  const auto alpha = node.attributes.get_floats(kPostAlpha, std::vector<float>(names.size(), 0.f));
  const auto beta = node.attributes.get_floats(kPostBeta, std::vector<float>(names.size(), 0.f));
  DEEP500_CHECK(alpha.size() == names.size() && beta.size() == names.size(), node.describe(), ": ",
                kPostEltwise, " names ", names.size(), " activations but ", kPostAlpha, " has ",
                alpha.size(), " and ", kPostBeta, " ", beta.size(), " values");
  const auto& known = post_activation_names();
  std::vector<PostActivation> out;
  for (size_t i = 0; i < names.size(); ++i) {
    DEEP500_CHECK(std::find(known.begin(), known.end(), names[i]) != known.end(), node.describe(),
                  ": unknown ", kPostEltwise, " '", names[i], "' (expected one of ", join(known),
                  ")");
    out.push_back({names[i], alpha[i], beta[i]});
  }
  return out;
}

}  // namespace deep500::ops::hints
