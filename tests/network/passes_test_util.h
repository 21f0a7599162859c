// Helpers of the graph-pass tests (passes_test.cc, passes_fusion_test.cc):
// models from ONNX text with random initializers, seeded feeds, and the check
// that a pass keeps the reference executor's outputs (1e-5 relative to each
// output's largest magnitude).
#pragma once

#include <gtest/gtest.h>

#include <onnx/defs/parser.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "deep/onnx_tensor.h"
#include "frameworks/register_all.h"
#include "network/passes/pass.h"
#include "network/reference_executor.h"

namespace deep500::passes_testing {

using network::Model;

inline Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  for (auto& x : v) x = d(rng);
  return Tensor::from_vector<float>(shape, v);
}

// Parses ONNX text and adds `inits` as initializers (random weights).
inline Model make_model(const char* text, const std::map<std::string, Tensor>& inits = {}) {
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, text);
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  for (const auto& [name, t] : inits) *m.mutable_graph()->add_initializer() = to_onnx(t, name);
  return network::parse_model(m.SerializeAsString(), "test.onnx");
}

// Seeded random feeds for the graph inputs no initializer fills.
inline std::map<std::string, Tensor> random_feeds(const Model& m, unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  std::map<std::string, Tensor> feeds;
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name())) continue;
    Shape s;
    for (const auto& d : in.type().tensor_type().shape().dim()) s.push_back(d.dim_value());
    feeds[in.name()] = random_tensor(s, rng);
  }
  return feeds;
}

inline std::map<std::string, Tensor> run(const Model& m,
                                         const std::map<std::string, Tensor>& feeds) {
  network::ReferenceExecutor exec(m, {.backends = {"reference"}});
  return exec.run(feeds);
}

// Same outputs within 1e-5 relative to each output's largest magnitude.
inline ::testing::AssertionResult same_outputs(const std::map<std::string, Tensor>& a,
                                               const std::map<std::string, Tensor>& b,
                                               double rtol = 1e-5) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "output counts differ";
  for (const auto& [name, ta] : a) {
    auto it = b.find(name);
    if (it == b.end()) return ::testing::AssertionFailure() << "output '" << name << "' missing";
    const Tensor& tb = it->second;
    if (ta.desc() != tb.desc())
      return ::testing::AssertionFailure() << "output '" << name << "': " << to_string(ta.desc())
                                           << " vs " << to_string(tb.desc());
    if (!is_floating(ta.dtype()) && ta.dtype() != DataType::Int64 &&
        ta.dtype() != DataType::Int32 && ta.dtype() != DataType::Bool)
      continue;
    const auto va = ta.to_double_vector(), vb = tb.to_double_vector();
    double scale = 0;
    for (double v : va)
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < va.size(); ++i) {
      const bool same = va[i] == vb[i] || (std::isnan(va[i]) && std::isnan(vb[i]));
      if (!same && !(std::abs(va[i] - vb[i]) <= rtol * std::max(scale, 1e-30)))
        return ::testing::AssertionFailure() << "output '" << name << "'[" << i << "]: " << va[i]
                                             << " vs " << vb[i] << " (scale " << scale << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

inline std::vector<std::string> op_types(const Model& m) {
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node()) ops.push_back(n.op_type());
  return ops;
}

inline bool has_initializer(const Model& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return true;
  return false;
}

inline const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// Applies `passes`, checking outputs agree with the unmodified model.
inline std::vector<network::PassResult> apply_and_compare(Model& m,
                                                          const std::vector<std::string>& passes) {
  auto feeds = random_feeds(m);
  auto before = run(m, feeds);
  auto results = network::apply_passes(m, passes);
  EXPECT_TRUE(same_outputs(before, run(m, feeds)));
  return results;
}

using Strings = std::vector<std::string>;

// Inputs of an ONNX test case directory (test_data_set_0/input_K.pb, in the
// order of the graph inputs no initializer fills).
inline std::map<std::string, Tensor> test_data_inputs(const Model& m,
                                                      const std::filesystem::path& dir) {
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  std::map<std::string, Tensor> feeds;
  int k = 0;
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name())) continue;
    const auto pb = dir / "test_data_set_0" / cat("input_", k++, ".pb");
    feeds[in.name()] = from_onnx(read_tensor_proto(pb.string()), pb.string());
  }
  return feeds;
}

}  // namespace deep500::passes_testing
