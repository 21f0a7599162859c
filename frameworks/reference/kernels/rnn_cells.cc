// Parsing of the RNN/GRU/LSTM activation attributes (see rnn_cells.h).
#include "frameworks/reference/kernels/rnn_cells.h"

#include <algorithm>
#include <cmath>

namespace deep500::reference::rnn {

// Builds the activation list; alpha/beta values are consumed in order by the
// activations that take them, ONNX operator defaults otherwise.
std::vector<Activation> parse_activations(const ops::NodeSpec& node, size_t per_dir, int dirs,
                                          const std::vector<std::string>& defaults) {
  auto names = node.attributes.get_strings("activations", {});
  if (names.empty())
    for (int d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() == per_dir && dirs == 2) names.insert(names.end(), names.begin(), names.end());
  DEEP500_CHECK(names.size() == per_dir * dirs, node.describe(), ": expected ", per_dir * dirs,
                " activations, got ", names.size());
  auto alphas = node.attributes.get_floats("activation_alpha", {});
  auto betas = node.attributes.get_floats("activation_beta", {});
  size_t ai = 0, bi = 0;
  auto take = [](const std::vector<float>& v, size_t& i, double fallback) {
    return i < v.size() ? static_cast<double>(v[i++]) : fallback;
  };
  std::vector<Activation> out;
  for (auto name : names) {
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    // name, kind, alpha default, beta default (NaN: the activation takes none)
    using K = Activation;
    const double no = std::nan("");
    const struct {
      const char* name;
      K::Kind kind;
      double alpha, beta;
    } table[] = {{"relu", K::Relu, no, no},
                 {"tanh", K::Tanh, no, no},
                 {"sigmoid", K::Sigmoid, no, no},
                 {"affine", K::Affine, 1, 0},
                 {"leakyrelu", K::LeakyRelu, 0.01, no},
                 {"thresholdedrelu", K::ThresholdedRelu, 1, no},
                 {"scaledtanh", K::ScaledTanh, 1, 1},
                 {"hardsigmoid", K::HardSigmoid, 0.2, 0.5},
                 {"elu", K::Elu, 1, no},
                 {"softsign", K::Softsign, no, no},
                 {"softplus", K::Softplus, no, no}};
    const auto* e = std::find_if(std::begin(table), std::end(table),
                                 [&](const auto& row) { return name == row.name; });
    DEEP500_CHECK(e != std::end(table), node.describe(), ": unknown activation '", name, "'");
    Activation a;
    a.kind = e->kind;
    if (!std::isnan(e->alpha)) a.alpha = take(alphas, ai, e->alpha);
    if (!std::isnan(e->beta)) a.beta = take(betas, bi, e->beta);
    out.push_back(a);
  }
  return out;
}

}  // namespace deep500::reference::rnn
