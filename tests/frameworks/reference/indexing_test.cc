// Reference indexing kernels: gradients against central finite differences
// (float64), error messages for bad indices, and a Resize mode whose node
// test cannot run end to end here, checked against the ONNX test data.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "deep/onnx_tensor.h"
#include "deep/tensor.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"
#include "tests/frameworks/reference/test_util.h"

using namespace deep500;

namespace {

using test::int_attr;
using test::string_attr;

struct Built {
  ops::NodeSpec node;
  std::unique_ptr<ops::Operator> op;
};

// Creates the reference kernel for `op_type` with the given attributes.
Built make(const std::string& op_type, int opset, const std::vector<Tensor>& inputs,
           const std::map<std::string, ops::Attribute>& attrs = {}) {
  frameworks::register_all();
  Built b;
  b.node.name = "n_" + op_type;
  b.node.op_type = op_type;
  b.node.opset = opset;
  b.node.attributes.set_owner(b.node.describe());
  for (const auto& [k, v] : attrs) b.node.attributes.set(k, v);
  ops::OpContext ctx{b.node, {}};
  for (size_t i = 0; i < inputs.size(); ++i) {
    b.node.inputs.push_back(inputs[i].defined() ? "x" + std::to_string(i) : "");
    ctx.inputs.push_back(inputs[i].defined() ? inputs[i].desc() : TensorDesc{});
  }
  b.node.outputs = {"y"};
  auto created = ops::Registry::global().create(ctx, {"reference"});
  if (!created) throw Error(created.refusal().reason);
  b.op = std::move(created->op);
  return b;
}

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (auto& x : v) x = dist(gen);
  return Tensor::from_vector<double>(shape, v);
}

// Checks d(sum(w * y))/d(input 0) from backward() against central finite
// differences, with w a fixed random weighting of the output.
void check_gradient(const std::string& op_type, int opset, std::vector<Tensor> inputs,
                    const std::map<std::string, ops::Attribute>& attrs = {}) {
  Built b = make(op_type, opset, inputs, attrs);
  ASSERT_TRUE(b.op->has_backward());
  ASSERT_TRUE(b.op->differentiable_inputs(inputs.size())[0]);
  std::vector<Tensor> out(1);
  b.op->forward(inputs, out);
  Tensor w = random_tensor(out[0].shape(), 7);
  auto loss = [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> o(1);
    b.op->forward(in, o);
    double s = 0;
    for (int64_t i = 0; i < o[0].numel(); ++i) s += o[0].data<double>()[i] * w.data<double>()[i];
    return s;
  };
  std::vector<Tensor> gy = {w}, gx(inputs.size());
  b.op->backward(gy, inputs, out, gx);
  ASSERT_TRUE(gx[0].defined());
  ASSERT_EQ(gx[0].shape(), inputs[0].shape());
  const double eps = 1e-6;
  for (int64_t i = 0; i < inputs[0].numel(); ++i) {
    std::vector<Tensor> plus = inputs, minus = inputs;
    plus[0] = inputs[0].clone();
    minus[0] = inputs[0].clone();
    plus[0].data<double>()[i] += eps;
    minus[0].data<double>()[i] -= eps;
    const double fd = (loss(plus) - loss(minus)) / (2 * eps);
    EXPECT_NEAR(gx[0].data<double>()[i], fd, 1e-7) << op_type << " element " << i;
  }
}

}  // namespace

TEST(IndexingGradient, GatherWithRepeatedAndNegativeIndices) {
  // Index 2 appears twice (as 2 and -1): its gradient must accumulate.
  auto idx = Tensor::from_vector<int64_t>({2, 2}, {2, -1, 0, 2});
  check_gradient("Gather", 13, {random_tensor({3, 4}, 1), idx}, {{"axis", int_attr(1)}});
  check_gradient("Gather", 13, {random_tensor({3, 4}, 2), idx}, {{"axis", int_attr(0)}});
}

TEST(IndexingGradient, GatherElements) {
  auto idx = Tensor::from_vector<int32_t>({2, 3}, {0, 2, -1, 1, 1, 0});
  check_gradient("GatherElements", 13, {random_tensor({2, 3}, 3), idx}, {{"axis", int_attr(1)}});
  auto idx0 = Tensor::from_vector<int64_t>({3, 2}, {1, 0, 1, 1, 0, 1});
  check_gradient("GatherElements", 13, {random_tensor({2, 2}, 4), idx0}, {{"axis", int_attr(0)}});
}

TEST(IndexingGradient, GatherNDWithBatchDims) {
  auto idx = Tensor::from_vector<int64_t>({2, 2, 1}, {1, 1, 0, -2});
  check_gradient("GatherND", 13, {random_tensor({2, 2, 3}, 5), idx}, {{"batch_dims", int_attr(1)}});
}

TEST(IndexingGradient, CumSumAllModes) {
  auto axis = Tensor::from_vector<int64_t>({}, {-1});
  for (int exclusive : {0, 1})
    for (int reverse : {0, 1})
      check_gradient("CumSum", 14, {random_tensor({2, 5}, 6 + exclusive * 2 + reverse), axis},
                     {{"exclusive", int_attr(exclusive)}, {"reverse", int_attr(reverse)}});
}

TEST(IndexingGradient, DataMovementOps) {
  check_gradient("DepthToSpace", 13, {random_tensor({1, 8, 2, 3}, 9)},
                 {{"blocksize", int_attr(2)}, {"mode", string_attr("CRD")}});
  check_gradient("SpaceToDepth", 13, {random_tensor({1, 2, 4, 2}, 10)},
                 {{"blocksize", int_attr(2)}});
  check_gradient("ReverseSequence", 10,
                 {random_tensor({4, 3, 2}, 11), Tensor::from_vector<int64_t>({3}, {4, 1, 2})});
}

TEST(Indexing, DepthToSpaceDcrUndoesSpaceToDepth) {
  Tensor x = random_tensor({2, 3, 4, 6}, 12);
  Built s2d = make("SpaceToDepth", 13, {x}, {{"blocksize", int_attr(2)}});
  std::vector<Tensor> mid(1), back(1);
  s2d.op->forward({&x, 1}, mid);
  EXPECT_EQ(mid[0].shape(), (Shape{2, 12, 2, 3}));
  Built d2s = make("DepthToSpace", 13, {mid[0]}, {{"blocksize", int_attr(2)}});
  d2s.op->forward({&mid[0], 1}, back);
  ASSERT_EQ(back[0].shape(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(back[0].data<double>()[i], x.data<double>()[i]);
}

TEST(Indexing, OutOfRangeGatherIndexNamesNodeIndexAndRange) {
  std::vector<Tensor> in = {random_tensor({3, 2}, 13), Tensor::from_vector<int64_t>({2}, {1, 5})};
  Built b = make("Gather", 13, in);
  std::vector<Tensor> out(1);
  try {
    b.op->forward(in, out);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("node 'n_Gather' (Gather, opset 13)"), std::string::npos) << msg;
    EXPECT_NE(msg.find(" 5 "), std::string::npos) << msg;
    EXPECT_NE(msg.find("[-3, 2]"), std::string::npos) << msg;
  }
  in[1] = Tensor::from_vector<int64_t>({1}, {-4});
  EXPECT_THROW(b.op->forward(in, out), Error);
}

TEST(Indexing, OutOfRangeScatterAndGatherNDIndicesThrow) {
  std::vector<Tensor> sc = {random_tensor({2, 2}, 14), Tensor::from_vector<int64_t>({1, 1}, {2}),
                            random_tensor({1, 1}, 15)};
  Built s = make("ScatterElements", 13, sc);
  std::vector<Tensor> out(1);
  EXPECT_THROW(s.op->forward(sc, out), Error);
  std::vector<Tensor> nd = {random_tensor({2, 2}, 16),
                            Tensor::from_vector<int64_t>({1, 2}, {0, -3})};
  Built g = make("GatherND", 13, nd);
  EXPECT_THROW(g.op->forward(nd, out), Error);
}

TEST(Indexing, TopKBreaksTiesByLowerIndex) {
  std::vector<Tensor> in = {Tensor::from_vector<float>({5}, {1, 3, 3, 0, 3}),
                            Tensor::from_vector<int64_t>({1}, {2})};
  Built b = make("TopK", 11, in);
  std::vector<Tensor> out(2);
  b.op->forward(in, out);
  EXPECT_EQ(out[1].to_int64_vector(), (std::vector<int64_t>{1, 2}));
  Built s = make("TopK", 11, in, {{"largest", int_attr(0)}});
  s.op->forward(in, out);
  EXPECT_EQ(out[1].to_int64_vector(), (std::vector<int64_t>{3, 0}));
}

// The node test for tf_half_pixel_for_nn also needs Constant; run the Resize
// node directly on the test case's tensors instead.
TEST(Indexing, ResizeTfHalfPixelForNNMatchesOnnxTestData) {
  const std::string dir = std::string(DEEP500_ONNX_TESTDATA) +
                          "/node/test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn/"
                          "test_data_set_0/";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no ONNX test data at " << dir;
  Tensor x = from_onnx(read_tensor_proto(dir + "input_0.pb"), "X");
  Tensor sizes = from_onnx(read_tensor_proto(dir + "input_1.pb"), "sizes");
  Tensor expected = from_onnx(read_tensor_proto(dir + "output_0.pb"), "Y");
  Tensor empty(DataType::Float, {0});
  std::vector<Tensor> in = {x, empty, empty, sizes};
  Built b = make("Resize", 11, in,
                 {{"mode", string_attr("nearest")},
                  {"coordinate_transformation_mode", string_attr("tf_half_pixel_for_nn")}});
  std::vector<Tensor> out(1);
  b.op->forward(in, out);
  ASSERT_EQ(out[0].shape(), expected.shape());
  for (int64_t i = 0; i < expected.numel(); ++i)
    EXPECT_EQ(out[0].data<float>()[i], expected.data<float>()[i]) << i;
}
