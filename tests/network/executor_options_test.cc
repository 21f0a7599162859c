// ExecutorOptions as named settings (network/executor_options.h): every
// field round-trips through set_option/settings_of, executors report the
// settings they run with, and bad names or values are one clear error.
#include <gtest/gtest.h>

#include "deep/error.h"
#include "frameworks/register_all.h"
#include "network/executor_options.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "tests/network/graph_builders.h"

namespace deep500 {
namespace {

std::string value_of(const std::vector<std::pair<std::string, std::string>>& settings,
                     const std::string& name) {
  for (const auto& [n, v] : settings)
    if (n == name) return v;
  return "<missing>";
}

TEST(ExecutorOptions, EverySettingRoundTripsByName) {
  const auto defaults = network::settings_of({});
  ASSERT_EQ(defaults.size(), 22u);  // one per field of ExecutorOptions and NodeThreadModel
  for (const auto& [name, value] : defaults) {
    network::ExecutorOptions o;
    std::string changed = value == "true"                          ? "false"
                          : value == "false"                       ? "true"
                          : name == "executor.backends"            ? "reference,onednn"
                          : name == "executor.idle_threads"        ? "spin"
                          : name == "executor.node_threads"        ? "team"
                          : name == "executor.thread_model.trials" ? "5"
                                                                   : "3";
    network::set_option(o, name, changed);
    EXPECT_EQ(value_of(network::settings_of(o), name), changed) << name;
    // Without the prefix too, and every other setting is left alone.
    network::ExecutorOptions p;
    network::set_option(p, name.substr(std::string("executor.").size()), changed);
    auto all = network::settings_of(p);
    for (const auto& [n, v] : all)
      EXPECT_EQ(v, n == name ? changed : value_of(defaults, n)) << name << " changed " << n;
  }
}

TEST(ExecutorOptions, BadNamesAndValuesAreClearErrors) {
  network::ExecutorOptions o;
  auto message = [&](const std::string& name, const std::string& value) {
    try {
      network::set_option(o, name, value);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("executor.bufer_reuse", "1")
                .find("unknown executor setting 'executor.bufer_"
                      "reuse' (expected one of: executor.backends"),
            std::string::npos);
  EXPECT_NE(message("buffer_reuse", "maybe").find("expected true or false, got 'maybe'"),
            std::string::npos);
  EXPECT_NE(message("node_threads", "true")
                .find("setting executor.node_threads: expected team, cost_model or measured, got "
                      "'true'"),
            std::string::npos);
  EXPECT_NE(message("threads", "-1").find("setting executor.threads: expected 0.."),
            std::string::npos);
  EXPECT_NE(message("threads", "many").find("expected a thread count, got 'many'"),
            std::string::npos);
  EXPECT_NE(message("thread_model.break_even", "0").find("expected a positive number"),
            std::string::npos);
  EXPECT_NE(message("idle_threads", "doze").find("expected sleep, spin or from_environment"),
            std::string::npos);
}

TEST(ExecutorOptions, ExecutorsReportTheResolvedSettingsTheyRunWith) {
  frameworks::register_all();
  network::Model m = test::relu_chain({2, 3});
  network::OptimizedExecutor opt(m, {.backends = {"reference"}, .fuse_post_ops = false});
  auto s = opt.settings();
  EXPECT_EQ(value_of(s, "executor.backends"), "reference");
  EXPECT_EQ(value_of(s, "executor.fuse_post_ops"), "false");
  EXPECT_NE(value_of(s, "executor.idle_threads"), "from_environment");  // resolved
  network::ReferenceExecutor ref(m, {});
  EXPECT_EQ(value_of(ref.settings(), "executor.backends"),
            network::settings_of(network::resolved({})).front().second);
  EXPECT_FALSE(ref.options().backends.empty());
}

}  // namespace
}  // namespace deep500
