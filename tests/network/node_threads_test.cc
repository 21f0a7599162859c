// Per-node thread counts of the optimized executor's inference plans
// (network/node_threads.h).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "frameworks/register_all.h"
#include "network/node_threads.h"
#include "network/optimized/optimized_executor.h"
#include "operators/registry.h"
#include "tests/network/graph_builders.h"

using namespace deep500;
using namespace deep500::test;
using network::NodeThreads;

namespace {

class OptimizedExecutorThreads : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { frameworks::register_all(); }
};

// Sets an environment variable for a scope (nullptr: unset) and restores it.
class EnvScope {
 public:
  EnvScope(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvScope() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(NodeThreads, WaitPolicyAsLibgompReadsIt) {
  {
    EnvScope spin("GOMP_SPINCOUNT", nullptr), policy("OMP_WAIT_POLICY", nullptr);
    EXPECT_FALSE(network::threads_sleep_when_idle());
    EXPECT_EQ(network::resolved({}).idle_threads, network::IdleThreads::spin);
  }
  {
    EnvScope spin("GOMP_SPINCOUNT", nullptr), policy("OMP_WAIT_POLICY", "Passive");
    EXPECT_TRUE(network::threads_sleep_when_idle());
    EXPECT_EQ(network::resolved({}).idle_threads, network::IdleThreads::sleep);
    // An explicit setting is kept whatever the environment says.
    EXPECT_EQ(network::resolved({.idle_threads = network::IdleThreads::spin}).idle_threads,
              network::IdleThreads::spin);
  }
  {
    EnvScope spin("GOMP_SPINCOUNT", "10000"), policy("OMP_WAIT_POLICY", "passive");
    EXPECT_FALSE(network::threads_sleep_when_idle());  // the spin count wins
  }
  {
    EnvScope spin("GOMP_SPINCOUNT", "0"), policy("OMP_WAIT_POLICY", "active");
    EXPECT_TRUE(network::threads_sleep_when_idle());
  }
}

TEST(NodeThreads, TheFasterMedianWinsATieGoesToOneThread) {
  EXPECT_TRUE((network::NodeTrial{{1, 9, 2}, {3, 3, 3}}).alone_wins());   // medians 2 < 3
  EXPECT_FALSE((network::NodeTrial{{1, 9, 4}, {3, 3, 3}}).alone_wins());  // 4 > 3
  EXPECT_TRUE((network::NodeTrial{{3}, {3}}).alone_wins());
  EXPECT_FALSE((network::NodeTrial{{}, {3}}).alone_wins());  // never ran alone
}

TEST(NodeThreads, RegionCostFollowsTheWaitPolicy) {
  network::NodeThreadModel m{.wake_seconds = 7e-5, .spin_seconds = 3e-6};
  EXPECT_EQ(network::parallel_region_seconds(2, true, m), 7e-5);
  EXPECT_EQ(network::parallel_region_seconds(2, false, m), 3e-6);
  EXPECT_EQ(network::parallel_region_seconds(1, true, m), 0);
}

TEST(NodeThreads, SplitsOnlyWhatOutweighsTheRegionCost) {
  for (const network::NodeThreadModel m :
       {network::NodeThreadModel{},
        network::NodeThreadModel{
            .flops_per_second = 1e9, .bytes_per_second = 2e9, .break_even = 1.5}}) {
    const double region = 100e-6;
    const double at_break_even = m.break_even * region;  // seconds on one thread
    ops::Cost big{at_break_even * m.flops_per_second * 1.01, 0};
    ops::Cost small{at_break_even * m.flops_per_second * 0.99, 0};
    ops::Cost streaming{0, at_break_even * m.bytes_per_second * 1.01};
    EXPECT_EQ(network::node_threads(big, 4, region, m), 4);
    EXPECT_EQ(network::node_threads(streaming, 4, region, m), 4);
    EXPECT_EQ(network::node_threads(small, 4, region, m), 1);
    EXPECT_EQ(network::node_threads(small, 4, 0, m), 4);  // free regions: always split
    EXPECT_EQ(network::node_threads(big, 1, region, m), 1);
    EXPECT_NEAR(network::single_thread_seconds({3e9, 4e9}, m),
                3e9 / m.flops_per_second + 4e9 / m.bytes_per_second, 1e-12);
  }
}

// A Relu kernel of the test-only backend "thread_probe" whose FLOPs are set per
// node name (declared, as custom operators do) and which records the OpenMP thread count it ran
// with (the count a oneDNN kernel would split over).
std::map<std::string, double> g_probe_flops;
std::map<std::string, std::vector<int>> g_probe_threads;
// Per node: microseconds its forward takes on one thread and on more.
std::map<std::string, std::pair<int, int>> g_probe_micros;

void busy_wait(int micros) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  while (std::chrono::steady_clock::now() < until) {
  }
}

class ThreadProbe final : public ops::Operator {
 public:
  explicit ThreadProbe(std::string node) : node_(std::move(node)) {}
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    g_probe_threads[node_].push_back(omp_get_max_threads());
    if (auto it = g_probe_micros.find(node_); it != g_probe_micros.end())
      busy_wait(omp_get_max_threads() == 1 ? it->second.first : it->second.second);
    Tensor& y = ops::ensure_output(out, 0, in[0].dtype(), in[0].shape());
    for (int64_t i = 0; i < y.numel(); ++i)
      y.data<float>()[i] = std::max(in[0].data<float>()[i], 0.f);
  }
  std::optional<double> declared_flops(std::span<const TensorDesc>) const override {
    return g_probe_flops[node_];
  }

 private:
  std::string node_;
};

void register_thread_probe() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::Registry::global().add(
        {"", "Relu", 1, INT_MAX, "thread_probe", "thread_probe:Relu",
         [](const ops::OpContext& ctx) -> Expected<std::unique_ptr<ops::Operator>> {
           return std::unique_ptr<ops::Operator>(std::make_unique<ThreadProbe>(ctx.node.name));
         }});
  });
}

TEST_F(OptimizedExecutorThreads, SmallNodesRunOnOneThreadWhereIdleThreadsSleep) {
  register_thread_probe();
  network::Model m = relu_chain({4, 4});  // nodes r1_Relu, r2_Relu, r3_Relu, y_Relu
  const network::NodeThreadModel model;
  const double region_flops = model.break_even * model.flops_per_second;  // x seconds
  g_probe_flops = {{"r1_Relu", 1e3},                                      // tiny: one thread always
                   {"r2_Relu", region_flops * 20e-6},  // splits only if threads spin
                   {"r3_Relu", region_flops * 1e-3},   // large: always split
                   {"y_Relu", region_flops * 1e-3}};
  g_probe_micros.clear();
  auto run = [&](network::NodeThreads per_node,
                 network::IdleThreads idle = network::IdleThreads::from_environment) {
    g_probe_threads.clear();
    network::OptimizedExecutor exec(m, {.backends = {"thread_probe"},
                                        .threads = 2,
                                        .node_threads = per_node,
                                        .idle_threads = idle});
    Tensor x = random_tensor({4, 4}, 3);
    for (int i = 0; i < 2; ++i) {  // planning run and replay
      Tensor y = exec.inference({{"x", x}}).at("y");
      for (int64_t k = 0; k < x.numel(); ++k)
        EXPECT_EQ(y.data<float>()[k], std::max(x.data<float>()[k], 0.f));
    }
    std::map<std::string, int> used;
    for (const auto& [node, counts] : g_probe_threads) {
      EXPECT_EQ(counts.size(), 2u) << node;
      EXPECT_EQ(counts.front(), counts.back()) << node << ": planning and replay differ";
      used[node] = counts.front();
    }
    EXPECT_EQ(exec.single_thread_nodes(),
              std::count_if(used.begin(), used.end(), [](const auto& u) { return u.second == 1; }));
    return used;
  };
  using Used = std::map<std::string, int>;
  {
    EnvScope spin("GOMP_SPINCOUNT", nullptr), policy("OMP_WAIT_POLICY", "PASSIVE");
    EXPECT_EQ(run(NodeThreads::cost_model),
              (Used{{"r1_Relu", 1}, {"r2_Relu", 1}, {"r3_Relu", 2}, {"y_Relu", 2}}));
    EXPECT_EQ(run(NodeThreads::team),
              (Used{{"r1_Relu", 2}, {"r2_Relu", 2}, {"r3_Relu", 2}, {"y_Relu", 2}}));
  }
  {
    EnvScope spin("GOMP_SPINCOUNT", nullptr), policy("OMP_WAIT_POLICY", "ACTIVE");
    EXPECT_EQ(run(NodeThreads::cost_model),
              (Used{{"r1_Relu", 1}, {"r2_Relu", 2}, {"r3_Relu", 2}, {"y_Relu", 2}}));
    // The typed setting, not the environment, decides when it is given.
    EXPECT_EQ(run(NodeThreads::cost_model, network::IdleThreads::sleep),
              (Used{{"r1_Relu", 1}, {"r2_Relu", 1}, {"r3_Relu", 2}, {"y_Relu", 2}}));
  }
}

// Trials stop once their rounds took the budget (3 ms a run, 10 ms budget,
// up to 5 rounds allowed): normally after two rounds (12 ms).
TEST_F(OptimizedExecutorThreads, TrialsStopAtTheirTimeBudget) {
  g_probe_micros = {{"slow", {3000, 3000}}};
  ThreadProbe alone("slow"), team("slow");
  const Tensor x = random_tensor({4, 4}, 3);
  const std::vector<Tensor> inputs = {x};
  std::vector<Tensor> outputs(1);
  const network::NodeTrial t =
      network::time_alone_and_team(alone, team, 2, inputs, outputs, 5, 10e-3);
  // Whatever the machine's load: every round but the last started under the
  // budget, and the rounds stopped once it was spent (3 ms runs: at most 2).
  ASSERT_EQ(t.alone.size(), t.team.size());
  ASSERT_GE(t.alone.size(), 1u);
  EXPECT_LE(t.alone.size(), 2u);
  double before_last = 0, total = 0;
  for (size_t r = 0; r < t.alone.size(); ++r) {
    EXPECT_GE(t.alone[r], 3e-3);
    EXPECT_GE(t.team[r], 3e-3);
    total += t.alone[r] + t.team[r];
    if (r + 1 < t.alone.size()) before_last = total;
  }
  EXPECT_LT(before_last, 10e-3);
  EXPECT_GE(total, 10e-3);
  g_probe_micros.clear();
}

// NodeThreads::measured: while planning, each node estimated under
// trial_below_seconds runs once more untimed and `trials` times on one
// thread, and `trials` more times on the team, then keeps the faster kernel;
// larger nodes never run alone.
TEST_F(OptimizedExecutorThreads, MeasuredTrialsKeepTheFasterKernelPerNode) {
  register_thread_probe();
  network::Model m = relu_chain({4, 4});
  const network::NodeThreadModel model;
  const double large = model.trial_below_seconds * model.flops_per_second * 10;
  g_probe_flops = {{"r1_Relu", 1e3}, {"r2_Relu", 1e3}, {"r3_Relu", 1e3}, {"y_Relu", large}};
  // r1 and r3 are faster alone (a late-waking team), r2 on the team; y is
  // large.
  g_probe_micros = {{"r1_Relu", {50, 2000}}, {"r2_Relu", {2000, 50}}, {"r3_Relu", {20, 1000}}};
  g_probe_threads.clear();
  network::OptimizedExecutor exec(
      m, {.backends = {"thread_probe"}, .threads = 2, .node_threads = NodeThreads::measured});
  Tensor x = random_tensor({4, 4}, 3);
  const int runs = 3;  // planning and two replays
  for (int i = 0; i < runs; ++i) {
    Tensor y = exec.inference({{"x", x}}).at("y");
    for (int64_t k = 0; k < x.numel(); ++k)
      ASSERT_EQ(y.data<float>()[k], std::max(x.data<float>()[k], 0.f)) << "run " << i;
  }
  auto alone_runs = [](const std::string& node) {
    const auto& c = g_probe_threads[node];
    return static_cast<long>(std::count(c.begin(), c.end(), 1));
  };
  // A small node's calls: the planning run (team), one untimed run alone,
  // then rounds of alone + team (as many as fit the time budget, at most
  // `trials`: fewer only on a loaded machine), then the two replays.
  auto rounds = [&](const std::string& node) {
    return (static_cast<long>(g_probe_threads[node].size()) - 1 - 1 - 2) / 2;
  };
  const auto trials = static_cast<long>(model.trials);
  for (const char* node : {"r1_Relu", "r2_Relu", "r3_Relu"}) {
    EXPECT_GE(rounds(node), 1) << node;
    EXPECT_LE(rounds(node), trials) << node;
  }
  const auto& r1 = g_probe_threads["r1_Relu"];
  EXPECT_TRUE(r1.end()[-1] == 1 && r1.end()[-2] == 1);  // both replays alone
  EXPECT_EQ(alone_runs("r1_Relu"), 1 + rounds("r1_Relu") + 2);
  const auto& r2 = g_probe_threads["r2_Relu"];
  EXPECT_TRUE(r2.end()[-1] == 2 && r2.end()[-2] == 2);  // both replays on the team
  EXPECT_EQ(alone_runs("r2_Relu"), 1 + rounds("r2_Relu"));
  EXPECT_EQ(g_probe_threads["r3_Relu"].back(), 1);
  EXPECT_EQ(alone_runs("y_Relu"), 0);
  EXPECT_EQ(g_probe_threads["y_Relu"].size(), static_cast<size_t>(runs));
  EXPECT_EQ(exec.single_thread_nodes(), 2);
}

}  // namespace
