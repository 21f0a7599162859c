// Built-in networks for `deep500 train --model NAME`, made through the ONNX
// protobuf and checked by Network::from_proto, so training needs no Python.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "network/network.h"

namespace deep500::training {

// LeNet-5 for 1x28x28 images (as scripts/make_models.py's lenet5):
// conv5x5(6, pad 2)+ReLU+maxpool2, conv5x5(16)+ReLU+maxpool2, fc 120, 84, 10
// (61,706 parameters). Graph input "input" float[N,1,28,28], output
// "logits" float[N,10]; no loss. Weights and biases are drawn as PyTorch's
// default initialization draws them (uniform in +-1/sqrt(fan_in)) from
// Random(seed), opset 17.
network::Network lenet5(uint64_t seed, int64_t classes = 10);

// A multilayer perceptron for 1x28x28 images: flatten, fc 128 + ReLU,
// fc `classes` (101,770 parameters for 10 classes); same input, output and
// initialization conventions as lenet5.
network::Network mlp(uint64_t seed, int64_t classes = 10);

// The built-in model names ("lenet5", "mlp") and a factory by name: Error listing
// the names for an unknown one.
std::vector<std::string> builtin_models();
network::Network make_builtin_model(const std::string& name, uint64_t seed);

}  // namespace deep500::training
