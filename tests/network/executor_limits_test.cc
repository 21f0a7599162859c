// The limits a user sets on one inference (ExecutorOptions): nesting depth
// of subgraphs and wall time, on both executors; each limit is an Error
// naming the setting, and a run inside the limit is unaffected.
#include <gtest/gtest.h>

#include <chrono>

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
  return network::parse_model(test::serialize_model_text(text), "limits.onnx");
}

// y = x through two levels of If (then-branches nested in then-branches).
network::Model nested_ifs() {
  return parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    nested (bool c, float[2] x) => (float[2] y) {
      y = If(c) <
        then_branch = outer_then () => (float[2] a) {
          a = If(c) <then_branch = inner_then () => (float[2] b) { b = Identity(x) },
                     else_branch = inner_else () => (float[2] b) { b = Neg(x) }>
        },
        else_branch = outer_else () => (float[2] a) { a = Neg(x) }>
    }
  )");
}

// v counts up for M iterations.
network::Model counting_loop() {
  return parse(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    counting (int64 M, bool cond, float v0) => (float v) {
      v = Loop(M, cond, v0) <body = step (int64 i, bool c, float x) => (bool c_out, float x_out) {
        c_out = Identity(c)
        one = Constant <value_float = 1.0> ()
        x_out = Add(x, one)
      }>
    }
  )");
}

std::map<std::string, Tensor> feeds_for_ifs() {
  return {{"c", Tensor::scalar<bool>(true)}, {"x", Tensor::from_vector<float>({2}, {1, -2})}};
}

std::map<std::string, Tensor> feeds_for_loop(int64_t trips) {
  return {{"M", Tensor::scalar<int64_t>(trips)},
          {"cond", Tensor::scalar<bool>(true)},
          {"v0", Tensor::scalar<float>(0)}};
}

std::unique_ptr<network::GraphExecutor> make(const std::string& kind, const network::Model& m,
                                             network::ExecutorOptions o) {
  if (kind == "reference") return std::make_unique<network::ReferenceExecutor>(m, o);
  return std::make_unique<network::OptimizedExecutor>(m, o);
}

class ExecutorLimits : public ::testing::TestWithParam<std::string> {};

TEST_P(ExecutorLimits, NestingDeeperThanTheSettingIsAnError) {
  network::Model m = nested_ifs();
  network::ExecutorOptions o;
  o.backends = {"reference"};
  o.max_nesting_depth = 1;
  auto shallow = make(GetParam(), m, o);
  EXPECT_NE(error_of([&] {
              shallow->inference(feeds_for_ifs());
            }).find("subgraph 'inner_then' is nested deeper than executor.max_nesting_depth=1"),
            std::string::npos);
  // The failed run left no nesting level behind: a deeper limit now runs it,
  // and the same executor fails the same way again (not at a lower depth).
  EXPECT_NE(error_of([&] { shallow->inference(feeds_for_ifs()); }).find("'inner_then'"),
            std::string::npos);
  o.max_nesting_depth = 2;
  auto deep_enough = make(GetParam(), m, o);
  auto y = deep_enough->inference(feeds_for_ifs());
  EXPECT_EQ(y.at("y").to_double_vector(), (std::vector<double>{1, -2}));
}

TEST_P(ExecutorLimits, InferencePastTheTimeLimitStopsAtTheNextNode) {
  network::Model m = counting_loop();
  network::ExecutorOptions o;
  o.backends = {"reference"};
  o.max_loop_iterations = int64_t{1} << 60;
  o.time_limit_seconds = 0.2;
  auto limited = make(GetParam(), m, o);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = error_of([&] { limited->inference(feeds_for_loop(int64_t{1} << 50)); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(e.find("limits.onnx: inference ran past executor.time_limit_seconds=0.2"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("s elapsed before node '"), std::string::npos) << e;
  EXPECT_LT(seconds, 30.0);  // bounded, not 2^50 iterations (a hang)
  // Inside the limit the result is exact.
  auto y = limited->inference(feeds_for_loop(100));
  EXPECT_EQ(y.at("v").to_double_vector(), (std::vector<double>{100}));
}

INSTANTIATE_TEST_SUITE_P(Executors, ExecutorLimits, ::testing::Values("reference", "optimized"));

TEST(ExecutorLimitSettings, RangesAreChecked) {
  network::ExecutorOptions o;
  network::set_option(o, "executor.time_limit_seconds", "2.5");
  network::set_option(o, "max_nesting_depth", "3");
  EXPECT_EQ(o.time_limit_seconds, 2.5);
  EXPECT_EQ(o.max_nesting_depth, 3);
  EXPECT_NE(error_of([&] {
              network::set_option(o, "executor.time_limit_seconds", "-1");
            }).find("executor.time_limit_seconds: expected seconds >= 0 (0 = no limit), got '-1'"),
            std::string::npos);
  o.max_nesting_depth = 100000;
  EXPECT_NE(error_of([&] {
              (void)network::resolved(o);
            }).find("executor.max_nesting_depth: expected 1..10000, got 100000"),
            std::string::npos);
}

}  // namespace
