// Shape and data-movement operators of the reference backend: gradients
// against central finite differences (float64), analytic forward values and
// error messages.
#include <gtest/gtest.h>

#include <cmath>

#include "deep/random.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"

using namespace deep500;

namespace {

struct Node {
  ops::NodeSpec spec;
  Node(const std::string& op, int opset, size_t n_in, size_t n_out = 1) {
    spec.name = "n_" + op;
    spec.op_type = op;
    spec.opset = opset;
    spec.attributes.set_owner(spec.describe());
    for (size_t i = 0; i < n_in; ++i) spec.inputs.push_back("x" + std::to_string(i));
    for (size_t i = 0; i < n_out; ++i) spec.outputs.push_back("y" + std::to_string(i));
  }
  Node& ints(const std::string& name, std::vector<int64_t> v) {
    ops::Attribute a;
    a.kind = ops::Attribute::Kind::Ints;
    a.ints = std::move(v);
    spec.attributes.set(name, a);
    return *this;
  }
  Node& str(const std::string& name, const std::string& v) {
    ops::Attribute a;
    a.kind = ops::Attribute::Kind::String;
    a.s = v;
    spec.attributes.set(name, a);
    return *this;
  }
  Node& integer(const std::string& name, int64_t v) {
    ops::Attribute a;
    a.kind = ops::Attribute::Kind::Int;
    a.i = v;
    spec.attributes.set(name, a);
    return *this;
  }
  std::unique_ptr<ops::Operator> make(const std::vector<Tensor>& inputs) const {
    frameworks::register_all();
    std::vector<TensorDesc> descs;
    for (const auto& t : inputs) descs.push_back(t.defined() ? t.desc() : TensorDesc{});
    ops::OpContext ctx{spec, descs};
    auto made = ops::Registry::global().create(ctx, {"reference"});
    if (!made.ok()) throw Error(made.refusal().reason);
    return std::move(made->op);
  }
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const {
    auto op = make(inputs);
    std::vector<Tensor> out(spec.outputs.size());
    op->forward(inputs, out);
    return out;
  }
};

Tensor random_double(const Shape& s, uint64_t seed) {
  Tensor t(DataType::Double, s);
  Random(seed).fill_uniform(t, -1.0, 1.0);
  return t;
}

Tensor i64(std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// loss = sum_k <w_k, y_k>; compares backward's d loss / d inputs[which]
// against central differences.
void check_gradient(const Node& node, std::vector<Tensor> inputs, size_t which = 0) {
  auto op = node.make(inputs);
  ASSERT_TRUE(op->has_backward());
  ASSERT_TRUE(op->differentiable_inputs(inputs.size())[which]);
  std::vector<Tensor> out(node.spec.outputs.size());
  op->forward(inputs, out);
  std::vector<Tensor> w;
  for (size_t k = 0; k < out.size(); ++k) w.push_back(random_double(out[k].shape(), 100 + k));
  auto loss = [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> o(node.spec.outputs.size());
    op->forward(in, o);
    double s = 0;
    for (size_t k = 0; k < o.size(); ++k)
      for (int64_t i = 0; i < o[k].numel(); ++i)
        s += o[k].data<double>()[i] * w[k].data<double>()[i];
    return s;
  };
  std::vector<Tensor> gx(inputs.size());
  op->backward(w, inputs, out, gx);
  ASSERT_TRUE(gx[which].defined());
  ASSERT_EQ(gx[which].shape(), inputs[which].shape());
  const double h = 1e-6;
  for (int64_t i = 0; i < inputs[which].numel(); ++i) {
    std::vector<Tensor> p = inputs, m = inputs;
    p[which] = inputs[which].clone();
    m[which] = inputs[which].clone();
    p[which].data<double>()[i] += h;
    m[which].data<double>()[i] -= h;
    const double fd = (loss(p) - loss(m)) / (2 * h);
    EXPECT_NEAR(gx[which].data<double>()[i], fd, 1e-7) << node.spec.op_type << " element " << i;
  }
}

std::vector<int64_t> ints_of(const Tensor& t) {
  return t.to_int64_vector();
}

}  // namespace

TEST(ShapeOpsGradient, Transpose) {
  check_gradient(Node("Transpose", 17, 1).ints("perm", {2, 0, 1}), {random_double({2, 3, 4}, 1)});
}

TEST(ShapeOpsGradient, Concat) {
  Node n = Node("Concat", 17, 3).integer("axis", -2);
  std::vector<Tensor> in{random_double({2, 1, 3}, 1), random_double({2, 2, 3}, 2),
                         random_double({2, 3, 3}, 3)};
  check_gradient(n, in, 0);
  check_gradient(n, in, 1);
  check_gradient(n, in, 2);
}

TEST(ShapeOpsGradient, SplitUneven) {
  check_gradient(Node("Split", 17, 2, 3).integer("axis", 1),
                 {random_double({2, 6, 2}, 4), i64({1, 3, 2})});
}

TEST(ShapeOpsGradient, SliceNegativeStep) {
  // rows 3,1 (step -2) and columns 1..3
  check_gradient(Node("Slice", 17, 5),
                 {random_double({4, 5}, 5), i64({-1, 1}), i64({0, 4}), i64({0, 1}), i64({-2, 1})});
}

TEST(ShapeOpsGradient, PadConstantReflectEdge) {
  for (const char* mode : {"constant", "reflect", "edge"})
    check_gradient(Node("Pad", 17, 2).str("mode", mode),
                   {random_double({3, 4}, 6), i64({1, 2, 2, -1})});
}

TEST(ShapeOpsGradient, Expand) {
  check_gradient(Node("Expand", 17, 2), {random_double({3, 1}, 7), i64({2, 3, 4})});
}

TEST(ShapeOpsGradient, Tile) {
  check_gradient(Node("Tile", 17, 2), {random_double({2, 3}, 8), i64({3, 2})});
}

TEST(ShapeOpsGradient, TriluAndReshape) {
  check_gradient(Node("Trilu", 17, 1).integer("upper", 0), {random_double({2, 3, 4}, 9)});
  check_gradient(Node("Reshape", 17, 2), {random_double({2, 3, 4}, 10), i64({4, -1})});
}

TEST(ShapeOpsForward, TransposeAndSliceValues) {
  auto x = Tensor::from_vector<int32_t>({2, 3}, {0, 1, 2, 3, 4, 5});
  auto t = Node("Transpose", 17, 1).run({x})[0];
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(ints_of(t), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  // x[:, ::-1] with ends clamped from INT64_MIN
  auto s = Node("Slice", 17, 5).run({x, i64({-1}), i64({INT64_MIN}), i64({1}), i64({-1})})[0];
  EXPECT_EQ(ints_of(s), (std::vector<int64_t>{2, 1, 0, 5, 4, 3}));
  // Slice-1 takes attributes.
  auto s1 =
      Node("Slice", 1, 1).ints("starts", {1}).ints("ends", {100}).ints("axes", {1}).run({x})[0];
  EXPECT_EQ(ints_of(s1), (std::vector<int64_t>{1, 2, 4, 5}));
}

TEST(ShapeOpsForward, PadReflectBeyondOneRepeat) {
  auto x = Tensor::from_vector<int64_t>({3}, {1, 2, 3});
  auto y = Node("Pad", 17, 2).str("mode", "reflect").run({x, i64({2, 2})})[0];
  EXPECT_EQ(ints_of(y), (std::vector<int64_t>{3, 2, 1, 2, 3, 2, 1}));  // numpy.pad reflect
  auto e = Node("Pad", 2, 1).ints("pads", {1, 0}).str("mode", "edge").run({x})[0];
  EXPECT_EQ(ints_of(e), (std::vector<int64_t>{1, 1, 2, 3}));
}

TEST(ShapeOpsForward, ReshapeZeroCopiesUnlessAllowZero) {
  Tensor x(DataType::Float, {2, 0, 3});
  EXPECT_EQ(Node("Reshape", 13, 2).run({x, i64({0, 0, 3})})[0].shape(), (Shape{2, 0, 3}));
  EXPECT_EQ(Node("Reshape", 14, 2).integer("allowzero", 1).run({x, i64({3, 0})})[0].shape(),
            (Shape{3, 0}));
}

TEST(ShapeOpsForward, DropoutTrainingIsSeededAndScaled) {
  Tensor x(DataType::Double, {1000});
  for (int i = 0; i < 1000; ++i) x.data<double>()[i] = 1.0;
  auto ratio = Tensor::scalar<double>(0.25);
  auto train = Tensor::scalar<bool>(true);
  Node n = Node("Dropout", 13, 3, 2).integer("seed", 7);
  auto a = n.run({x, ratio, train});
  auto b = n.run({x, ratio, train});
  int kept = 0;
  for (int i = 0; i < 1000; ++i) {
    const bool m = a[1].data<bool>()[i];
    kept += m;
    EXPECT_EQ(a[0].data<double>()[i], m ? 1.0 / 0.75 : 0.0);
    EXPECT_EQ(m, b[1].data<bool>()[i]);  // same seed, same mask
  }
  EXPECT_NEAR(kept, 750, 60);
  auto inference = Node("Dropout", 13, 1, 2).run({x});
  EXPECT_EQ(inference[0].data<double>()[3], 1.0);
  EXPECT_TRUE(inference[1].data<bool>()[3]);
}

TEST(ShapeOpsErrors, ReshapeNamesNodeAndBothShapes) {
  try {
    Node("Reshape", 17, 2).run({Tensor(DataType::Float, {2, 3}), i64({4, 2})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("n_Reshape"), std::string::npos) << m;
    EXPECT_NE(m.find("[2,3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[4,2]"), std::string::npos) << m;
  }
}

TEST(ShapeOpsErrors, SqueezeNonUnitAxisAndBadSplit) {
  EXPECT_THROW(Node("Squeeze", 13, 2).run({Tensor(DataType::Float, {2, 3}), i64({0})}), Error);
  try {
    Node("Split", 17, 2, 2).run({Tensor(DataType::Float, {5}), i64({2, 2})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n_Split"), std::string::npos) << e.what();
  }
}

TEST(ShapeOpsForward, CastStringRoundTripsShortest) {
  auto x = Tensor::from_vector<float>({3}, {0.1f, -2.5f, 1e-5f});
  auto s = Node("Cast", 17, 1).integer("to", 8).run({x})[0];
  ASSERT_EQ(s.dtype(), DataType::String);
  EXPECT_EQ(s.data<std::string>()[0], "0.1");
  EXPECT_EQ(s.data<std::string>()[1], "-2.5");
  EXPECT_EQ(s.data<std::string>()[2], "1e-05");
  auto back = Node("Cast", 17, 1).integer("to", 11).run({s})[0];
  EXPECT_EQ(back.data<double>()[0], 0.1);  // parsed as double, not via float
}

TEST(ShapeOpsGradient, DropoutBackwardUsesMaskAndScale) {
  Tensor x = random_double({200}, 11);
  Node n = Node("Dropout", 13, 3, 2).integer("seed", 3);
  std::vector<Tensor> in{x, Tensor::scalar<double>(0.5), Tensor::scalar<bool>(true)};
  auto op = n.make(in);
  std::vector<Tensor> out(2);
  op->forward(in, out);
  Tensor gy = random_double({200}, 12);
  std::vector<Tensor> gx(3);
  std::vector<Tensor> gys{gy, Tensor()};
  op->backward(gys, in, out, gx);
  ASSERT_TRUE(gx[0].defined());
  for (int i = 0; i < 200; ++i) {
    const bool m = out[1].data<bool>()[i];
    EXPECT_DOUBLE_EQ(gx[0].data<double>()[i], m ? 2.0 * gy.data<double>()[i] : 0.0);
    // y is linear in x with the same factor, so y = x * dy/dx
    EXPECT_DOUBLE_EQ(out[0].data<double>()[i], m ? 2.0 * x.data<double>()[i] : 0.0);
  }
}
