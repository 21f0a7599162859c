// ATen operators as the "libtorch" operator backend (frameworks/libtorch/
// aten_kernels.h): forward and backward against the reference kernels,
// in-place outputs, the differentiable inputs, refusals and what results
// record. The op sweep (tests/operators/op_sweep_test.cc) checks every op of
// the backend against the reference as for every backend. Skipped when the
// build has no libtorch.
#include <gtest/gtest.h>

#include <algorithm>

#include "deep/random.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"
#include "validation/compare.h"
#include "validation/forward_check.h"
#include "validation/gradient_check.h"
#include "validation/op_specs.h"

using namespace deep500;
using validation::CheckStatus;

namespace {

bool have_libtorch() {
  frameworks::register_all();
  auto b = frameworks::built_backends();
  return std::find(b.begin(), b.end(), "libtorch") != b.end();
}

#define REQUIRE_LIBTORCH() \
  if (!have_libtorch()) GTEST_SKIP() << "built without DEEP500_WITH_TORCH"

validation::OpSpec spec(std::string op, std::string attributes,
                        std::vector<validation::InputSpec> inputs) {
  validation::OpSpec s;
  s.label = op;
  s.op_type = std::move(op);
  s.attributes = std::move(attributes);
  s.inputs = std::move(inputs);
  return s;
}

ops::CreatedOp create(const ops::NodeSpec& node, const std::vector<TensorDesc>& inputs) {
  auto made = ops::Registry::global().create(ops::OpContext{node, inputs}, {"libtorch"});
  if (!made.ok()) throw Error(made.refusal().reason);
  return std::move(made.value());
}

}  // namespace

TEST(AtenBackend, ConvForwardAndBackwardMatchTheReference) {
  REQUIRE_LIBTORCH();
  const auto s = spec(
      "Conv", "pads=1,0,2,1 strides=2,1 group=2",
      {{DataType::Float, {2, 4, 9, 7}}, {DataType::Float, {6, 2, 3, 3}}, {DataType::Float, {6}}});
  const auto node = s.node();
  auto fwd = validation::check_forward(node, s.make_inputs(5), "libtorch");
  EXPECT_EQ(fwd.status, CheckStatus::Passed) << fwd.message;
  EXPECT_EQ(fwd.implementation.rfind("libtorch:", 0), 0u) << fwd.implementation;
  auto bwd = validation::compare_backward_with_reference(node, s.make_inputs(11), "libtorch");
  EXPECT_EQ(bwd.status, CheckStatus::Passed) << bwd.message;
  EXPECT_EQ(bwd.compared_inputs, 3);  // X, W and B
}

TEST(AtenBackend, OutputsOfTheRightShapeAreWrittenInPlaceAndInputsAreNotCopied) {
  REQUIRE_LIBTORCH();
  const auto s = spec("Relu", "", {{DataType::Float, {3, 5}}});
  const auto node = s.node();
  auto made = create(node, s.descs());
  const std::vector<Tensor> x = s.make_inputs(2);
  std::vector<Tensor> y(1);
  made.op->forward(x, y);
  const void* first = y[0].raw();
  made.op->forward(x, y);
  EXPECT_EQ(y[0].raw(), first);
  for (int64_t i = 0; i < 15; ++i)
    EXPECT_EQ(y[0].data<float>()[i], std::max(0.f, x[0].data<float>()[i])) << i;
}

TEST(AtenBackend, DifferentiatesExactlyTheInputsTheReferenceDoes) {
  REQUIRE_LIBTORCH();
  const auto reshape =
      spec("Reshape", "", {{DataType::Float, {2, 6}}, {DataType::Int64, {2}, -1, 1, {3, 4}}});
  auto made = create(reshape.node(), reshape.descs());
  EXPECT_TRUE(made.op->has_backward());
  EXPECT_EQ(made.op->differentiable_inputs(2), (std::vector<bool>{true, false}));
  // An op the reference does not differentiate has no backward here either.
  const auto shape = spec("Shape", "", {{DataType::Float, {2, 6}}});
  EXPECT_FALSE(create(shape.node(), shape.descs()).op->has_backward());
}

TEST(AtenBackend, AnElementTypeWithoutAnAtenTypeIsRefusedWithTheReason) {
  REQUIRE_LIBTORCH();
  const auto s = spec("Identity", "", {{DataType::UInt32, {4}}});
  const auto node = s.node();
  auto made = ops::Registry::global().create(ops::OpContext{node, s.descs()}, {"libtorch"});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.refusal().reason.find("libtorch: input 0: element type uint32 has no ATen"),
            std::string::npos)
      << made.refusal().reason;
}

TEST(AtenBackend, RunsOnlyWhereNamedAndRecordsLibtorchAndItsBlas) {
  REQUIRE_LIBTORCH();
  auto& r = ops::Registry::global();
  const auto preference = r.default_preference();
  EXPECT_EQ(std::count(preference.begin(), preference.end(), "libtorch"), 0);
  EXPECT_FALSE(r.op_types("libtorch").empty());  // loads it
  std::map<std::string, std::string> libraries;
  for (const auto& [name, version] : r.libraries()) libraries[name] = version;
  EXPECT_EQ(libraries["libtorch"].rfind("1.", 0), 0u) << libraries["libtorch"];
  EXPECT_NE(libraries["libtorch.blas"].find("blas"), std::string::npos)
      << libraries["libtorch.blas"];
}

TEST(AtenBackend, BackwardAfterAPromisedForwardReusesItsGraphAndSkipsUnwantedGradients) {
  REQUIRE_LIBTORCH();
  const auto s =
      spec("Gemm", "transB=1 alpha=0.5 beta=2.0",
           {{DataType::Float, {3, 4}}, {DataType::Float, {5, 4}}, {DataType::Float, {5}}});
  const auto node = s.node();
  auto grads_of = [&](ops::Operator& op, const std::vector<Tensor>& x, const Tensor& gy) {
    std::vector<Tensor> y(1), gx(3);
    op.forward(x, y);
    op.backward(std::vector<Tensor>{gy}, x, y, gx);
    return gx;
  };
  const std::vector<Tensor> x = s.make_inputs(4), other = s.make_inputs(5);
  Tensor gy(DataType::Float, {3, 5});
  Random(6).fill_uniform(gy, -1, 1);
  auto plain = create(node, s.descs());
  const auto expected = grads_of(*plain.op, x, gy);
  auto promised = create(node, s.descs());
  promised.op->set_backward_follows_forward(true);
  for (int call = 0; call < 2; ++call) {  // the kept graph serves repeated backward calls
    const auto got = grads_of(*promised.op, x, gy);
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(validation::compare(got[i], expected[i], {0, 0}).ok) << "input " << i;
  }
  // Other input tensors than the forward's: recomputed, not the stale graph.
  std::vector<Tensor> y(1), gx(3);
  promised.op->forward(x, y);
  promised.op->backward(std::vector<Tensor>{gy}, other, y, gx);
  const auto fresh = grads_of(*plain.op, other, gy);
  EXPECT_TRUE(validation::compare(gx[1], fresh[1], {0, 0}).ok);
  EXPECT_FALSE(validation::compare(gx[1], expected[1], {0, 0}).ok);
  // A gradient nobody needs is left undefined.
  promised.op->set_required_gradients({false, true, true});
  std::vector<Tensor> some(3);
  promised.op->forward(x, y);
  promised.op->backward(std::vector<Tensor>{gy}, x, y, some);
  EXPECT_FALSE(some[0].defined());
  EXPECT_TRUE(some[1].defined() && some[2].defined());
}

TEST(AtenBackend, AnAbsentOutputGradientGivesZeroGradientsEvenInReusedSlots) {
  REQUIRE_LIBTORCH();
  const auto s = spec("Tanh", "", {{DataType::Float, {2, 3}}});
  auto made = create(s.node(), s.descs());
  const std::vector<Tensor> x = s.make_inputs(3);
  std::vector<Tensor> y(1), gx(1);
  made.op->forward(x, y);
  gx[0] = Tensor(DataType::Float, {2, 3});
  for (int64_t i = 0; i < 6; ++i) gx[0].data<float>()[i] = 7.f;  // stale contents
  made.op->backward(std::vector<Tensor>{Tensor()}, x, y, gx);
  ASSERT_TRUE(gx[0].defined());
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(gx[0].data<float>()[i], 0.f) << i;
}
