#include "validation/forward_check.h"

#include <gtest/gtest.h>

#include "deep/text.h"
#include "frameworks/register_all.h"

namespace deep500::validation {
namespace {

ops::NodeSpec binary_node(const std::string& op) {
  ops::NodeSpec n;
  n.name = "n";
  n.op_type = op;
  n.opset = 17;
  n.inputs = {"a", "b"};
  n.outputs = {"y"};
  return n;
}

// A test-only "Add" that is off by `delta` at one element, or refuses, or throws.
class SkewedAdd final : public ops::Operator {
 public:
  explicit SkewedAdd(double delta) : delta_(delta) {}
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    if (delta_ < 0) throw Error("deliberate failure");
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    for (int64_t i = 0; i < y.numel(); ++i)
      y.data<float>()[i] = in[0].data<float>()[i] + in[1].data<float>()[i];
    y.data<float>()[3] += static_cast<float>(delta_);
  }

 private:
  double delta_;
};

// Registry holds a mutex (not movable): fill one in place.
void fill_test_registry(ops::Registry& r) {
  frameworks::register_all();
  // The reference Add, copied from the global registry by creating through it.
  r.add({"", "Add", 1, INT_MAX, "reference", "reference:Add",
         [](const ops::OpContext& ctx) -> Expected<std::unique_ptr<ops::Operator>> {
           auto c = ops::Registry::global().create(ctx, {"reference"});
           if (!c.ok()) return c.refusal();
           return std::move(c->op);
         }});
  auto add = [&](const std::string& backend, double delta) {
    r.add({"", "Add", 1, INT_MAX, backend, backend + ":Add",
           [delta](const ops::OpContext&) -> Expected<std::unique_ptr<ops::Operator>> {
             return std::unique_ptr<ops::Operator>(std::make_unique<SkewedAdd>(delta));
           }});
  };
  add("close", 1e-7);
  add("off", 0.5);
  add("throws", -1);
  r.add({"", "Add", 1, INT_MAX, "refuses", "refuses:Add",
         [](const ops::OpContext&) -> Expected<std::unique_ptr<ops::Operator>> {
           return refuse("float only on Tuesdays");
         }});
}

std::vector<Tensor> two_inputs() {
  return ops::random_inputs({{DataType::Float, {2, 4}}, {DataType::Float, {2, 4}}}, 42);
}

TEST(ValidationForwardCheck, ReferenceAgreesWithItself) {
  frameworks::register_all();
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    auto r = check_forward(binary_node(op), two_inputs(), "reference");
    EXPECT_EQ(r.status, CheckStatus::Passed) << op << ": " << r.message;
    EXPECT_EQ(r.max_abs_error, 0.0);
    EXPECT_EQ(r.implementation, std::string("reference:") + op);
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].name, "y");
  }
}

TEST(ValidationForwardCheck, ToleratesTinyDifferences) {
  ops::Registry reg;
  fill_test_registry(reg);
  auto r = check_forward(binary_node("Add"), two_inputs(), "close", {}, reg);
  EXPECT_EQ(r.status, CheckStatus::Passed) << r.message;
  EXPECT_GT(r.max_abs_error, 0.0);
  EXPECT_EQ(r.worst_index, 3);
  EXPECT_EQ(r.worst_output, 0);
}

TEST(ValidationForwardCheck, ReportsMismatchWithWorstIndex) {
  ops::Registry reg;
  fill_test_registry(reg);
  auto r = check_forward(binary_node("Add"), two_inputs(), "off", {}, reg);
  EXPECT_EQ(r.status, CheckStatus::Failed);
  EXPECT_EQ(r.worst_index, 3);
  EXPECT_NEAR(r.max_abs_error, 0.5, 1e-6);
  EXPECT_NE(r.message.find("output 'y'"), std::string::npos) << r.message;
}

// The reference kernel of the node, with its output element 3 moved by delta.
class SkewedReference final : public ops::Operator {
 public:
  SkewedReference(const ops::OpContext& ctx, double delta)
      : ref_(std::move(ops::Registry::global().create(ctx, {"reference"}).value().op)),
        delta_(delta) {}
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    ref_->forward(in, out);
    out[0].data<float>()[3] += static_cast<float>(delta_);
  }

 private:
  std::unique_ptr<ops::Operator> ref_;
  double delta_;
};

void add_skewed(ops::Registry& r, const std::string& op, const std::string& backend, double delta) {
  r.add({"", op, 1, INT_MAX, backend, backend + ":" + op,
         [delta](const ops::OpContext& ctx) -> Expected<std::unique_ptr<ops::Operator>> {
           return std::unique_ptr<ops::Operator>(std::make_unique<SkewedReference>(ctx, delta));
         }});
}

// A MatMul element sums 1024 products of U(-1, 1) values (outputs up to
// ~30): float rounding there follows the terms, so 1e-3 off is within the
// reduction's allowance (~3e-3) while 0.1 is not; an elementwise Add keeps
// the dtype's tolerance and 1e-3 off fails it.
TEST(ValidationForwardCheck, ReductionsAllowRoundingInProportionToTheirTerms) {
  frameworks::register_all();
  ops::Registry reg;
  add_skewed(reg, "MatMul", "rounding", 1e-3);
  add_skewed(reg, "MatMul", "wrong", 0.1);
  add_skewed(reg, "Add", "rounding", 1e-3);
  for (const char* op : {"MatMul", "Add"})
    reg.add({"", op, 1, INT_MAX, "reference", cat("reference:", op),
             [](const ops::OpContext& ctx) -> Expected<std::unique_ptr<ops::Operator>> {
               return std::move(ops::Registry::global().create(ctx, {"reference"}).value().op);
             }});
  const auto mm =
      ops::random_inputs({{DataType::Float, {4, 1024}}, {DataType::Float, {1024, 4}}}, 7);
  auto ok = check_forward(binary_node("MatMul"), mm, "rounding", {}, reg);
  EXPECT_EQ(ok.status, CheckStatus::Passed) << ok.message;
  EXPECT_NEAR(ok.max_abs_error, 1e-3, 1e-5);
  auto bad = check_forward(binary_node("MatMul"), mm, "wrong", {}, reg);
  EXPECT_EQ(bad.status, CheckStatus::Failed);
  auto add = check_forward(binary_node("Add"), two_inputs(), "rounding", {}, reg);
  EXPECT_EQ(add.status, CheckStatus::Failed) << "elementwise: " << add.max_abs_error;
  // An explicit tolerance is used as given.
  ForwardCheckOptions strict;
  strict.tolerance = Tolerance{1e-4, 1e-5};
  EXPECT_EQ(check_forward(binary_node("MatMul"), mm, "rounding", strict, reg).status,
            CheckStatus::Failed);
}

TEST(ValidationForwardCheck, ThrowingBackendFailsAndRefusalSkips) {
  ops::Registry reg;
  fill_test_registry(reg);
  auto t = check_forward(binary_node("Add"), two_inputs(), "throws", {}, reg);
  EXPECT_EQ(t.status, CheckStatus::Failed);
  EXPECT_NE(t.message.find("deliberate failure"), std::string::npos);
  auto s = check_forward(binary_node("Add"), two_inputs(), "refuses", {}, reg);
  EXPECT_EQ(s.status, CheckStatus::Skipped);
  EXPECT_NE(s.message.find("Tuesdays"), std::string::npos);
  auto none = check_forward(binary_node("Add"), two_inputs(), "not-built", {}, reg);
  EXPECT_EQ(none.status, CheckStatus::Skipped);
}

TEST(ValidationForwardCheck, RandomInputsAreSeeded) {
  std::vector<TensorDesc> d = {{DataType::Float, {16}}, {DataType::Int64, {8}}};
  auto a = ops::random_inputs(d, 5, -2, 2), b = ops::random_inputs(d, 5, -2, 2),
       c = ops::random_inputs(d, 6);
  for (int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(a[0].data<float>()[i], b[0].data<float>()[i]);
    EXPECT_GE(a[0].data<float>()[i], -2.0f);
    EXPECT_LT(a[0].data<float>()[i], 2.0f);
  }
  EXPECT_NE(a[0].data<float>()[0], c[0].data<float>()[0]);
  for (int64_t i = 0; i < 8; ++i) EXPECT_LE(std::abs(a[1].data<int64_t>()[i]), 2);
}

}  // namespace
}  // namespace deep500::validation
