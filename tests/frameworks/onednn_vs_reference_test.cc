// The oneDNN backend against the reference backend on the same nodes and
// inputs, forward and backward (needs the reference kernels).
#include <gtest/gtest.h>

#include "tests/frameworks/onednn_test_util.h"

namespace deep500 {
namespace {

using namespace onednn_testing;
using ops::NodeSpec;

// ---- against the reference backend (needs its kernels) -----------------------

void compare_with_reference(const NodeSpec& spec, const std::vector<Tensor>& in, double rtol = 1e-4,
                            double atol = 1e-5) {
  auto ref = create(spec, in, "reference");
  ASSERT_TRUE(ref.ok()) << ref.refusal().reason;
  auto op = onednn_op(spec, in);
  auto y = run(*op, in, spec.outputs.size());
  auto yr = run(*ref->op, in, spec.outputs.size());
  for (size_t i = 0; i < y.size(); ++i)
    expect_close(y[i], yr[i], rtol, atol, spec.op_type + " output " + std::to_string(i));
  if (!op->has_backward() || !ref->op->has_backward()) return;
  std::vector<Tensor> gy(y.size());
  gy[0] = rnd(y[0].shape(), 99);
  std::vector<Tensor> gx(in.size()), gxr(in.size());
  op->backward(gy, in, y, gx);
  ref->op->backward(gy, in, yr, gxr);
  auto diff = op->differentiable_inputs(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (diff[i] && gxr[i].defined())
      expect_close(gx[i], gxr[i], rtol * 10, atol * 10,
                   spec.op_type + " grad " + std::to_string(i));
}

TEST(OnednnVsReference, Conv) {
  compare_with_reference(
      Node("Conv", 13, 3).i("group", 2).is("strides", {2, 1}).is("pads", {1, 1, 0, 1}).spec,
      {rnd({2, 4, 9, 8}, 1), rnd({6, 2, 3, 3}, 2), rnd({6}, 3)});
  compare_with_reference(Node("Conv", 13, 2).is("dilations", {2, 1, 1}).spec,
                         {rnd({1, 2, 7, 6, 5}, 4), rnd({3, 2, 2, 3, 2}, 5)});
  compare_with_reference(Node("ConvTranspose", 11, 3)
                             .i("group", 2)
                             .is("strides", {2, 1})
                             .is("pads", {1, 0, 0, 1})
                             .spec,
                         {rnd({2, 4, 5, 6}, 6), rnd({4, 3, 3, 3}, 7), rnd({6}, 8)});
}
TEST(OnednnVsReference, GemmMatMul) {
  compare_with_reference(Node("Gemm", 13, 3).i("transA", 1).f("alpha", 0.5f).f("beta", 2.f).spec,
                         {rnd({7, 5}, 6), rnd({7, 3}, 7), rnd({1, 3}, 8)});
  compare_with_reference(Node("MatMul", 13, 2).spec, {rnd({2, 3, 4}, 9), rnd({2, 4, 5}, 10)});
}
TEST(OnednnVsReference, Pooling) {
  Tensor x = rnd({2, 3, 9, 8}, 11);
  compare_with_reference(Node("MaxPool", 12, 1)
                             .is("kernel_shape", {3, 3})
                             .is("strides", {2, 2})
                             .is("pads", {1, 1, 1, 1})
                             .spec,
                         {x});
  compare_with_reference(Node("MaxPool", 12, 1)
                             .is("kernel_shape", {2, 2})
                             .is("dilations", {2, 2})
                             .i("ceil_mode", 1)
                             .is("strides", {2, 2})
                             .spec,
                         {x});
  compare_with_reference(
      Node("AveragePool", 11, 1).is("kernel_shape", {3, 2}).is("pads", {1, 1, 1, 1}).spec, {x});
  compare_with_reference(Node("AveragePool", 11, 1)
                             .is("kernel_shape", {3, 2})
                             .is("pads", {1, 1, 1, 1})
                             .i("count_include_pad", 1)
                             .spec,
                         {x});
  compare_with_reference(Node("GlobalAveragePool", 1, 1).spec, {x});
  compare_with_reference(Node("GlobalMaxPool", 1, 1).spec, {x});
}
TEST(OnednnVsReference, BatchNorm) {
  std::vector<Tensor> in = {rnd({2, 3, 4, 5}, 12), rnd({3}, 13), rnd({3}, 14), rnd({3}, 15),
                            rnd({3}, 16, 0.5, 1.5)};
  compare_with_reference(Node("BatchNormalization", 15, 5).spec, in);
  compare_with_reference(Node("BatchNormalization", 15, 5, 3).i("training_mode", 1).spec, in, 1e-4,
                         1e-4);
}
TEST(OnednnVsReference, EltwiseSoftmaxLrn) {
  Tensor x = rnd({2, 3, 4, 5}, 17);
  for (const char* t : {"Relu", "LeakyRelu", "Elu", "Sigmoid", "Tanh", "Exp", "Abs", "Softplus",
                        "Neg", "HardSwish", "Round"})
    compare_with_reference(Node(t, 14, 1).spec, {x});
  Tensor pos = rnd({50}, 18, 0.1, 3);
  compare_with_reference(Node("Sqrt", 13, 1).spec, {pos});
  compare_with_reference(Node("Reciprocal", 13, 1).spec, {pos});
  compare_with_reference(Node("Clip", 13, 3).spec,
                         {x, Tensor::scalar<float>(-0.3f), Tensor::scalar<float>(0.4f)});
  compare_with_reference(Node("Softmax", 13, 1).i("axis", 2).spec, {x});
  compare_with_reference(Node("LogSoftmax", 11, 1).i("axis", 1).spec, {x});
  compare_with_reference(Node("LRN", 13, 1).i("size", 3).spec, {x});
}

}  // namespace
}  // namespace deep500
