// deep/named_registry.h, and the registries built on it (executors,
// optimizers, graph passes): names, replacement, the unknown-name error, and
// concurrent use.
#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "deep/named_registry.h"
#include "network/executor.h"
#include "network/passes/pass.h"
#include "tests/error_of.h"
#include "training/optimizer_registry.h"

using deep500::test::error_of;

namespace deep500 {
namespace {

using IntRegistry = NamedRegistry<std::function<int()>>;

TEST(NamedRegistry, AddsReplacesAndListsSorted) {
  IntRegistry r("widget", {{"b", [] { return 2; }}});
  r.add("a", [] { return 1; });
  EXPECT_EQ(r.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.has("a"));
  EXPECT_FALSE(r.has("c"));
  EXPECT_EQ(r.get("b")(), 2);
  r.add("b", [] { return 3; });  // replaces
  EXPECT_EQ(r.get("b")(), 3);
  EXPECT_EQ(r.names().size(), 2u);
}

TEST(NamedRegistry, UnknownNamesAndEmptyEntriesAreErrors) {
  IntRegistry r("widget", {{"a", [] { return 1; }}, {"b", [] { return 2; }}});
  EXPECT_EQ(error_of([&] { r.get("c"); }), "unknown widget 'c' (expected one of: a, b)");
  EXPECT_EQ(error_of([&] { r.get("c", "; or 'all'"); }),
            "unknown widget 'c' (expected one of: a, b; or 'all')");
  EXPECT_NE(error_of([&] { r.add("", [] { return 0; }); }).find("empty name"), std::string::npos);
  EXPECT_NE(error_of([&] { r.add("x", nullptr); }).find("empty name or factory"),
            std::string::npos);
}

TEST(NamedRegistry, ConcurrentAddsAndLookupsLoseNothing) {
  IntRegistry r("widget");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&r, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string name = std::to_string(t) + "." + std::to_string(i);
        r.add(name, [i] { return i; });
        EXPECT_EQ(r.get(name)(), i);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(r.names().size(), 800u);
}

TEST(NamedRegistry, ExecutorsOptimizersAndPassesShareTheErrorForm) {
  EXPECT_NE(error_of([] {
              network::ExecutorRegistry::global().get("fast");
            }).find("unknown executor 'fast' (expected one of: "),
            std::string::npos);
  EXPECT_NE(error_of([] {
              training::OptimizerRegistry::global().create("adamm");
            }).find("unknown optimizer 'adamm' (expected one of: accelegrad, adagrad, adam,"),
            std::string::npos);
  EXPECT_EQ(error_of([] { network::PassRegistry().create("nope"); }),
            "unknown graph pass 'nope' (expected one of: bn-folding, constant-folding, "
            "dead-code-elimination, identity-elimination; or 'default' for the default "
            "pipeline)");
  // Local registries start with the built-ins and stay apart from the global ones.
  network::PassRegistry local;
  local.add("extra", [] { return network::PassRegistry().create("bn-folding"); });
  EXPECT_TRUE(local.has("extra"));
  EXPECT_FALSE(network::PassRegistry::global().has("extra"));
  EXPECT_NE(error_of([&] {
              local.add("default", [] { return nullptr; });
            }).find("'default' names the default pipeline"),
            std::string::npos);
}

}  // namespace
}  // namespace deep500
