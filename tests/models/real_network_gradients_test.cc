// Gradients of loss = sum(y) w.r.t. every trainable initializer of the real
// networks (scripts/make_models.py), computed by network::gradients() through
// the reference kernels' backward(), compared with PyTorch autograd.
// Built only when network/backprop.h exists (see tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <onnx/shape_inference/implementation.h>
#include <nlohmann/json.hpp>

#include "deep/npy.h"
#include "deep/onnx_tensor.h"
#include "frameworks/register_all.h"
#include "network/backprop.h"
#include "network/model.h"
#include "network/reference_executor.h"
#include "tests/models/model_data.h"
#include "validation/compare.h"

using namespace deep500;
namespace fs = std::filesystem;

using deep500::testing::max_abs;
using deep500::testing::models_dir;

namespace {

class RealNetworkGradients : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

TEST_P(RealNetworkGradients, MatchPyTorchAutograd) {
  const nlohmann::json& manifest = deep500::testing::manifest();
  const auto& entry = manifest.at("networks").at(GetParam());
  const fs::path dir = models_dir() / GetParam();
  network::Model model = network::load_model((dir / entry.at("model").get<std::string>()).string());
  Tensor x = read_npy((dir / entry.at("input").get<std::string>()).string());
  const std::string in_name = entry.at("input_name").get<std::string>();
  const std::string out_name = entry.at("output_name").get<std::string>();

  // The forward run must keep every intermediate value for backward(): make
  // each node output a graph output (types from ONNX shape inference).
  network::Model probe = model;
  onnx::shape_inference::InferShapes(probe.proto);
  std::set<std::string> exposed;
  for (const auto& o : probe.graph().output()) exposed.insert(o.name());
  std::map<std::string, const onnx::ValueInfoProto*> infos;
  for (const auto& vi : probe.graph().value_info()) infos[vi.name()] = &vi;
  auto* g = probe.proto.mutable_graph();
  for (const auto& node : model.graph().node()) {
    for (const auto& o : node.output()) {
      if (exposed.count(o)) continue;
      ASSERT_EQ(infos.count(o), 1u) << "shape inference gave no type for " << o;
      *g->add_output() = *infos.at(o);
      exposed.insert(o);
    }
  }

  network::ReferenceExecutor exec(probe, {.backends = {"reference"}});
  auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, Tensor> values = exec.run({{in_name, x}});
  auto t1 = std::chrono::steady_clock::now();
  values[in_name] = x;
  for (const auto& init : model.graph().initializer())
    values.emplace(init.name(), from_onnx(init, init.name()));

  std::vector<const onnx::NodeProto*> nodes;
  for (const auto& n : model.graph().node()) nodes.push_back(&n);
  std::vector<std::string> wrt;
  for (const auto& [param, info] : entry.at("gradients").items())
    wrt.push_back(info.at("initializer").get<std::string>());
  ASSERT_FALSE(wrt.empty());
  auto lookup = [&](const std::string& name) -> const Tensor* {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  };
  ASSERT_EQ(values.count(out_name), 1u);
  std::map<std::string, Tensor> grads =
      network::gradients(nodes, model.opsets, lookup,
                         {{out_name, network::ones_like(values.at(out_name))}}, wrt, {"reference"});
  auto t2 = std::chrono::steady_clock::now();

  // Per tensor: rtol 1e-3, atol 1e-4 of that gradient's largest magnitude
  // (float32 sums over 10^5..10^6 terms in a different order than PyTorch).
  double worst_scaled = 0, worst_rel_ok = 0;
  std::string worst_name;
  int failures = 0;
  for (const auto& [param, info] : entry.at("gradients").items()) {
    const std::string init = info.at("initializer").get<std::string>();
    Tensor want = read_npy((dir / info.at("file").get<std::string>()).string());
    ASSERT_EQ(grads.count(init), 1u) << "no gradient returned for " << init;
    const double scale = max_abs(want);
    auto c = validation::compare(grads.at(init), want, {1e-3, 1e-4 * scale});
    const double scaled = scale > 0 ? c.max_abs_error / scale : c.max_abs_error;
    if (scaled > worst_scaled) {
      worst_scaled = scaled;
      worst_name = init;
    }
    worst_rel_ok = std::max(worst_rel_ok, c.max_rel_error);
    if (!c.ok && ++failures <= 10)
      ADD_FAILURE() << GetParam() << " d/d " << init << ": " << c.message;
  }
  std::cout << "[ gradient ] " << GetParam() << ": forward "
            << std::chrono::duration<double>(t1 - t0).count() << " s, backward "
            << std::chrono::duration<double>(t2 - t1).count() << " s, " << wrt.size()
            << " gradients; worst max-abs/scale " << worst_scaled << " (" << worst_name
            << "), max elementwise rel " << worst_rel_ok << "\n";
  EXPECT_EQ(failures, 0) << failures << " gradient tensors differ";
}

INSTANTIATE_TEST_SUITE_P(Torchvision, RealNetworkGradients,
                         ::testing::Values("resnet18", "mobilenet_v2", "squeezenet1_1"),
                         [](const auto& info) { return info.param; });

}  // namespace
