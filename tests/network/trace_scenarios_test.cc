// Node events as a Chrome trace (network/trace_events.h) and the MLPerf-style
// inference scenarios (network/scenarios.h) on a tiny model.
#include <algorithm>
#include <sstream>

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <nlohmann/json.hpp>

#include "frameworks/register_all.h"
#include "network/executor.h"
#include "network/scenarios.h"
#include "network/trace_events.h"

using namespace deep500;

namespace {

network::Model tiny() {
  frameworks::register_all();
  onnx::ModelProto m;
  auto st = onnx::OnnxParser::Parse(m, R"(<ir_version: 8, opset_import: ["" : 17]>
tiny (float[N,4] X) => (float[N,3] Y) <float[4,3] W = {1,0,0, 0,1,0, 0,0,1, 1,1,1}> {
  T = MatMul(X, W)
  Y = Relu(T)
})");
  EXPECT_TRUE(st.IsOK()) << st.ErrorMessage();
  return network::parse_model(m.SerializeAsString(), "tiny.onnx");
}

}  // namespace

TEST(TraceEvents, OneCompleteEventPerNodeWithOpBackendAndShapes) {
  auto model = tiny();
  auto exec = network::ExecutorRegistry::global().create("reference", model, {{"reference"}, 0});
  metrics::ChromeTrace trace;
  network::ChromeTraceRecorder rec(trace);
  exec->add_events(&rec);
  exec->inference({{"X", Tensor(DataType::Float, {2, 4})}});
  exec->remove_events(&rec);
  std::stringstream s;
  trace.write(s);
  auto events = nlohmann::json::parse(s.str()).at("traceEvents");
  ASSERT_EQ(events.size(), 2u);
  const char* ops[] = {"MatMul", "Relu"};
  const char* shapes[] = {"float32[2,4], float32[4,3]", "float32[2,3]"};
  double last_end = 0;
  for (size_t i = 0; i < 2; ++i) {
    const auto& e = events[i];
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_EQ(e.at("args").at("op_type"), ops[i]);
    EXPECT_EQ(e.at("args").at("implementation"), std::string("reference:") + ops[i]);
    EXPECT_EQ(e.at("args").at("backend"), "reference");
    EXPECT_EQ(e.at("args").at("input_shapes"), shapes[i]);
    EXPECT_GE(e.at("dur").get<double>(), 0);
    EXPECT_GE(e.at("ts").get<double>(), last_end - 1e-3);  // in order, not overlapping
    last_end = e.at("ts").get<double>() + e.at("dur").get<double>();
  }
  EXPECT_EQ(network::backend_of("onednn:conv:jit"), "onednn");
  EXPECT_EQ(network::backend_of("plain"), "plain");
}

// The profiler's sums from node events with known times: per node the
// median over runs, summed by op type and kernel, largest first; the
// reference share is the reference kernels' part of the sum.
TEST(NodeProfiler, MediansSummedByKernelAndTheReferenceShare) {
  network::NodeProfiler p;
  const std::string conv = "conv", conv2 = "conv2", einsum = "einsum", Conv = "Conv",
                    Einsum = "Einsum", onednn = "onednn:conv:jit", reference = "reference:Einsum";
  const double conv_times[] = {3, 1, 2}, conv2_times[] = {5, 4, 100}, einsum_times[] = {6, 6, 6};
  for (int run = 0; run < 3; ++run) {
    p.after_node({conv, Conv, onednn, conv_times[run]});
    p.after_node({conv2, Conv, onednn, conv2_times[run]});
    p.after_node({einsum, Einsum, reference, einsum_times[run]});
  }
  ASSERT_EQ(p.nodes().size(), 3u);
  EXPECT_EQ(p.nodes()[1].seconds, (std::vector<double>{5, 4, 100}));
  const auto rows = network::profile_rows(p);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].op_type, "Conv");  // medians 2 + 5 = 7 > 6
  EXPECT_EQ(rows[0].nodes, 2);
  EXPECT_DOUBLE_EQ(rows[0].seconds, 7);
  EXPECT_EQ(rows[1].implementation, "reference:Einsum");
  EXPECT_DOUBLE_EQ(network::backend_share(rows, "reference"), 6.0 / 13);
  EXPECT_DOUBLE_EQ(network::backend_share(rows, "onednn"), 7.0 / 13);
  EXPECT_EQ(network::backend_share({}, "reference"), 0);
}

TEST(Scenarios, SingleStreamPercentilesAreOrdered) {
  auto model = tiny();
  auto exec = network::ExecutorRegistry::global().create("reference", model);
  auto batch = std::map<std::string, Tensor>{{"X", Tensor(DataType::Float, {8, 4})}};
  auto query = network::first_sample(batch);
  EXPECT_EQ(query.at("X").shape(), (Shape{1, 4}));
  metrics::RunnerSettings s;
  s.warmup = 1;
  s.min_repetitions = 30;
  s.max_repetitions = 30;
  s.min_time_seconds = 0;
  auto r = network::single_stream(*exec, query, metrics::Runner(s));
  EXPECT_EQ(r.scenario, "SingleStream");
  EXPECT_EQ(r.samples_per_query, 1);
  EXPECT_EQ(r.result.seconds.size(), 30u);
  EXPECT_GT(r.p50, 0);
  EXPECT_LE(r.p50, r.p90);
  EXPECT_LE(r.p90, r.p99);
  const auto [lo, hi] = std::minmax_element(r.result.seconds.begin(), r.result.seconds.end());
  EXPECT_GE(r.p50, *lo);
  EXPECT_LE(r.p99, *hi);
  EXPECT_EQ(r.result.label("scenario"), "SingleStream");

  s.batch = 2;
  EXPECT_THROW(network::single_stream(*exec, query, metrics::Runner(s)), Error);
}

TEST(Scenarios, OfflineReportsSamplesPerSecond) {
  auto model = tiny();
  auto exec = network::ExecutorRegistry::global().create("reference", model);
  metrics::RunnerSettings s;
  s.warmup = 1;
  s.min_repetitions = 10;
  s.max_repetitions = 10;
  s.min_time_seconds = 0;
  auto r = network::offline(*exec, {{"X", Tensor(DataType::Float, {8, 4})}}, metrics::Runner(s));
  EXPECT_EQ(r.scenario, "Offline");
  EXPECT_EQ(r.samples_per_query, 8);
  double total = 0;
  for (double t : r.result.seconds) total += t;
  ASSERT_GT(total, 0);
  EXPECT_NEAR(r.samples_per_second, 8 * 10 / total, 1e-9 * r.samples_per_second);
  EXPECT_DOUBLE_EQ(r.result.counters.items, 8);
}
