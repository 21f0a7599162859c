// The op matrix library (recipes/tasks/op_matrix.h) on a registry of its own: the
// reference kernels plus a backend whose Relu is wrong by a constant and
// whose Tanh is right, so that a mismatch becomes a FAILED cell with its
// error while a correct kernel of the same backend passes.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "frameworks/reference/register.h"
#include "operators/registry.h"
#include "recipes/tasks/op_matrix.h"

using namespace deep500;

namespace {

// y = f(x) + offset, elementwise on float32.
template <int kOffsetMilli, bool kTanh>
class Elementwise final : public ops::Operator {
 public:
  explicit Elementwise(const ops::OpContext&) {}
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Tensor& y = ops::ensure_output(out, 0, DataType::Float, in[0].shape());
    const float* x = in[0].data<float>();
    for (int64_t i = 0; i < y.numel(); ++i)
      y.data<float>()[i] = (kTanh ? std::tanh(x[i]) : std::max(x[i], 0.f)) + kOffsetMilli * 1e-3f;
  }
};

void add_test_backend(ops::Registry& r) {
  reference::register_kernels(r);
  r.add({"", "Relu", 1, INT_MAX, "off_by_one_tenth", "test:relu_plus_0.1",
         ops::make_factory<Elementwise<100, false>>()});
  r.add({"", "Tanh", 1, INT_MAX, "off_by_one_tenth", "test:tanh",
         ops::make_factory<Elementwise<0, true>>()});
}

}  // namespace

TEST(OpMatrix, AMismatchIsAFailedCellAndACorrectKernelPasses) {
  ops::Registry registry;
  add_test_backend(registry);
  recipes::MatrixOptions o;
  o.ops = {"Relu", "Tanh"};
  o.speed = false;
  o.registry = &registry;
  std::ostringstream info;
  const recipes::OpMatrix m = recipes::run_op_matrix(o, info);
  EXPECT_EQ(m.backends, (std::vector<std::string>{"off_by_one_tenth", "reference"}));
  int checked = 0;
  for (const auto& c : m.cells) {
    SCOPED_TRACE(c.case_label + " " + c.backend + " " + c.pass);
    if (c.backend != "off_by_one_tenth") continue;
    if (c.op_type == "Relu") {
      EXPECT_EQ(c.status, "FAILED");
      EXPECT_NEAR(c.max_abs_error, 0.1, 1e-6);
      EXPECT_FALSE(c.detail.empty());
    } else {
      EXPECT_EQ(c.status, c.pass == "forward" ? "passed" : "refused");  // no backward
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3);  // Relu forward (no backward after a failure), Tanh both
  EXPECT_EQ(m.failed(), 1);
  std::ostringstream table;
  recipes::write_matrix_table(m, table);
  EXPECT_NE(table.str().find("FAILED 1.0"), std::string::npos) << table.str();
}
