#include "network/constant_folding.h"

namespace deep500::network {

bool folds_to_constant(const std::string& op_type) {
  const bool random = op_type.rfind("Random", 0) == 0 || op_type == "Bernoulli" ||
                      op_type == "Multinomial" || op_type == "Dropout";
  return !random;
}

}  // namespace deep500::network
