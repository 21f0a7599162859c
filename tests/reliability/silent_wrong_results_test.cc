// Results that used to come back wrong with exit 0 (issue: "silent wrong
// success"): int64 Range over the whole int64 range returned an empty
// tensor; a model declaring an output type other than what it computes ran
// on. Expected values are analytic.
#include <gtest/gtest.h>

#include <limits>

#include "frameworks/register_all.h"
#include "network/model.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "tests/error_of.h"
#include "tests/onnx_models.h"

using deep500::test::error_of;
using namespace deep500;

namespace {

network::Model parse(const char* text) {
  frameworks::register_all();
  return network::parse_model(test::serialize_model_text(text), "wrong.onnx");
}

std::vector<std::unique_ptr<network::GraphExecutor>> executors(const network::Model& m) {
  std::vector<std::unique_ptr<network::GraphExecutor>> out;
  out.push_back(std::make_unique<network::ReferenceExecutor>(m, network::ExecutorOptions{}));
  out.push_back(std::make_unique<network::OptimizedExecutor>(m, network::ExecutorOptions{}));
  return out;
}

TEST(SilentWrongResults, Int64RangeOverTheWholeRangeIsExact) {
  auto m = parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    r (int64 s, int64 l, int64 d) => (int64[n] y) { y = Range(s, l, d) }
  )");
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const int64_t q = int64_t{1} << 62;
  for (auto& ex : executors(m)) {
    SCOPED_TRACE(ex->name());
    // ceil((2^64 - 1) / 2^62) = 4 values: -2^63, -2^62, 0, 2^62.
    auto y = ex->inference({{"s", Tensor::scalar<int64_t>(lo)},
                            {"l", Tensor::scalar<int64_t>(hi)},
                            {"d", Tensor::scalar<int64_t>(q)}})
                 .at("y");
    ASSERT_EQ(y.shape(), (Shape{4}));
    EXPECT_EQ(y.data<int64_t>()[0], lo);
    EXPECT_EQ(y.data<int64_t>()[1], -q);
    EXPECT_EQ(y.data<int64_t>()[2], 0);
    EXPECT_EQ(y.data<int64_t>()[3], q);
    // Downwards over the whole range: ceil((-2^64 + 1) / -2^63) = 2 values.
    y = ex->inference({{"s", Tensor::scalar<int64_t>(hi)},
                       {"l", Tensor::scalar<int64_t>(lo)},
                       {"d", Tensor::scalar<int64_t>(lo)}})
            .at("y");
    ASSERT_EQ(y.shape(), (Shape{2}));
    EXPECT_EQ(y.data<int64_t>()[1], -1);
    // 2^63 - 1 elements cannot exist: an Error, not an allocation attempt.
    EXPECT_NE(error_of([&] {
                ex->inference({{"s", Tensor::scalar<int64_t>(lo)},
                               {"l", Tensor::scalar<int64_t>(hi)},
                               {"d", Tensor::scalar<int64_t>(1)}});
              }).find("range of more than 9e18 elements"),
              std::string::npos);
  }
}

TEST(SilentWrongResults, AnOutputOfAnotherTypeThanDeclaredIsAnError) {
  auto m = parse(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    t (float[2] x) => (int64[2] y) { y = Relu(x) }
  )");
  for (auto& ex : executors(m)) {
    SCOPED_TRACE(ex->name());
    EXPECT_EQ(error_of([&] {
                ex->inference({{"x", Tensor::from_vector<float>({2}, {1, -1})}});
              }),
              "wrong.onnx: graph output 'y' is declared int64, computed float32");
  }
}

}  // namespace
