// Internal to the recurrent kernels (rnn.cc): the ONNX RNN/GRU/LSTM activation functions with
// their derivatives, and parsing of the activations / activation_alpha / activation_beta
// attributes.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "frameworks/reference/kernels/common.h"
#include "operators/node.h"

namespace deep500::reference::rnn {

// Inline: evaluated once per gate element.
struct Activation {
  enum Kind {
    Relu,
    Tanh,
    Sigmoid,
    Affine,
    LeakyRelu,
    ThresholdedRelu,
    ScaledTanh,
    HardSigmoid,
    Elu,
    Softsign,
    Softplus
  };
  Kind kind = Tanh;
  double alpha = 0, beta = 0;

  double f(double x) const {
    switch (kind) {
      case Relu: return x > 0 ? x : 0;
      case Tanh: return std::tanh(x);
      case Sigmoid: return 1 / (1 + std::exp(-x));
      case Affine: return alpha * x + beta;
      case LeakyRelu: return x >= 0 ? x : alpha * x;
      case ThresholdedRelu: return x > alpha ? x : 0;
      case ScaledTanh: return alpha * std::tanh(beta * x);
      case HardSigmoid: return std::clamp(alpha * x + beta, 0.0, 1.0);
      case Elu: return x >= 0 ? x : alpha * (std::exp(x) - 1);
      case Softsign: return x / (1 + std::abs(x));
      case Softplus: return std::log1p(std::exp(x));
    }
    return 0;
  }
  // Derivative with respect to x.
  double df(double x) const {
    switch (kind) {
      case Relu: return x > 0 ? 1 : 0;
      case Tanh: {
        double t = std::tanh(x);
        return 1 - t * t;
      }
      case Sigmoid: {
        double s = 1 / (1 + std::exp(-x));
        return s * (1 - s);
      }
      case Affine: return alpha;
      case LeakyRelu: return x >= 0 ? 1 : alpha;
      case ThresholdedRelu: return x > alpha ? 1 : 0;
      case ScaledTanh: {
        double t = std::tanh(beta * x);
        return alpha * beta * (1 - t * t);
      }
      case HardSigmoid: {
        double v = alpha * x + beta;
        return v > 0 && v < 1 ? alpha : 0;
      }
      case Elu: return x >= 0 ? 1 : alpha * std::exp(x);
      case Softsign: {
        double d = 1 + std::abs(x);
        return 1 / (d * d);
      }
      case Softplus: return 1 / (1 + std::exp(-x));
    }
    return 0;
  }
};

// Builds the activation list; alpha/beta values are consumed in order by the
// activations that take them, ONNX operator defaults otherwise.
std::vector<Activation> parse_activations(const ops::NodeSpec& node, size_t per_dir, int dirs,
                                          const std::vector<std::string>& defaults);

}  // namespace deep500::reference::rnn
