// The registry's refusal contract (operators/registry.h) on a local Registry:
// refusal() reasons, Unsupported from a constructor or prepare(), Error
// propagating, preference order, opset ranges, and the combined message.
#include <gtest/gtest.h>

#include "operators/registry.h"

using namespace deep500;

namespace {

class Kernel : public ops::Operator {
 public:
  void forward(std::span<const Tensor>, std::span<Tensor>) override {}
};

// Accepts everything.
struct Accepts final : Kernel {
  explicit Accepts(const ops::OpContext&) {}
};

// Refuses float64 inputs up front.
struct RefusesDouble final : Kernel {
  static std::string refusal(const ops::OpContext& ctx) {
    return ctx.inputs[0].dtype == DataType::Double ? "float64 is not implemented" : "";
  }
  explicit RefusesDouble(const ops::OpContext&) {}
};

// Looks deeper in its constructor and refuses rank > 2.
struct RefusesInConstructor final : Kernel {
  explicit RefusesInConstructor(const ops::OpContext& ctx) {
    if (ctx.inputs[0].shape.size() > 2) throw ops::Unsupported("rank > 2 is not handled");
  }
};

// Refuses in prepare(), which the factory calls after construction.
struct RefusesInPrepare final : Kernel {
  explicit RefusesInPrepare(const ops::OpContext&) {}
  void prepare(const ops::OpContext&) { throw ops::Unsupported("no plan for this shape"); }
};

// Bad input: the node has no `alpha`.
struct NeedsAlpha final : Kernel {
  explicit NeedsAlpha(const ops::OpContext& ctx) { ctx.node.attributes.get_float("alpha"); }
};

// Takes a constructor argument through make_factory<Op>(args...).
struct Tagged final : Kernel {
  Tagged(const ops::OpContext&, std::string tag) : tag_(std::move(tag)) {}
  std::string implementation() const override { return tag_; }
  std::string tag_;
};

ops::KernelEntry entry(const std::string& backend, ops::OpFactory f, int since = 1,
                       int until = INT_MAX) {
  return {"", "TestOp", since, until, backend, backend + ":TestOp", std::move(f)};
}

ops::NodeSpec test_node(int opset = 13) {
  ops::NodeSpec n;
  n.name = "t0";
  n.op_type = "TestOp";
  n.opset = opset;
  n.inputs = {"x"};
  n.outputs = {"y"};
  return n;
}

std::string refusal_of(const ops::Registry& r, const ops::NodeSpec& node, const TensorDesc& x,
                       const std::vector<std::string>& backends) {
  ops::OpContext ctx{node, {x}};
  auto made = r.create(ctx, backends);
  return made.ok() ? "accepted by " + made->backend : made.refusal().reason;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

const TensorDesc kFloat2d{DataType::Float, {2, 3}};

}  // namespace

TEST(RegistryRefusal, RefusalReasonReachesTheMessageWithTheBackend) {
  ops::Registry r;
  r.add(entry("picky", ops::make_factory<RefusesDouble>()));
  const auto node = test_node();
  EXPECT_EQ(refusal_of(r, node, kFloat2d, {"picky"}), "accepted by picky");
  const std::string why = refusal_of(r, node, {DataType::Double, {2}}, {"picky"});
  EXPECT_TRUE(contains(why, "node 't0' (TestOp, opset 13): no backend accepted it")) << why;
  EXPECT_TRUE(contains(why, "picky: float64 is not implemented")) << why;
}

TEST(RegistryRefusal, UnsupportedFromConstructorOrPrepareIsARefusal) {
  ops::Registry r;
  r.add(entry("deep", ops::make_factory<RefusesInConstructor>()));
  r.add(entry("planner", ops::make_factory<RefusesInPrepare>()));
  const auto node = test_node();
  EXPECT_EQ(refusal_of(r, node, kFloat2d, {"deep"}), "accepted by deep");
  EXPECT_TRUE(contains(refusal_of(r, node, {DataType::Float, {1, 2, 3}}, {"deep"}),
                       "deep: rank > 2 is not handled"));
  EXPECT_TRUE(contains(refusal_of(r, node, kFloat2d, {"planner"}), "planner: no plan"));
}

TEST(RegistryRefusal, ErrorFromConstructorPropagates) {
  ops::Registry r;
  r.add(entry("strict", ops::make_factory<NeedsAlpha>()));
  r.add(entry("lenient", ops::make_factory<Accepts>()));
  const auto node = test_node();
  ops::OpContext ctx{node, {kFloat2d}};
  // Bad input is not a refusal: the next backend is not tried.
  try {
    r.create(ctx, {"strict", "lenient"});
    FAIL() << "a node without alpha was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "alpha")) << e.what();
  }
  EXPECT_TRUE(r.create(ctx, {"lenient", "strict"}).ok());
}

TEST(RegistryRefusal, FirstAcceptingBackendInPreferenceOrderWins) {
  ops::Registry r;
  r.add(entry("a", ops::make_factory<Accepts>()));
  r.add(entry("b", ops::make_factory<Accepts>()));
  r.add(entry("picky", ops::make_factory<RefusesDouble>()));
  const auto node = test_node();
  EXPECT_EQ(refusal_of(r, node, kFloat2d, {"b", "a"}), "accepted by b");
  EXPECT_EQ(refusal_of(r, node, kFloat2d, {"a", "b"}), "accepted by a");
  EXPECT_EQ(refusal_of(r, node, {DataType::Double, {2}}, {"picky", "b", "a"}), "accepted by b");
}

TEST(RegistryRefusal, OpsetRangesSelectTheKernel) {
  ops::Registry r;
  r.add(entry("ranged", ops::make_factory<Tagged>(std::string("old")), 5, 9));
  r.add(entry("ranged", ops::make_factory<Tagged>(std::string("new")), 10));
  auto impl = [&](int opset) {
    const auto node = test_node(opset);
    ops::OpContext ctx{node, {kFloat2d}};
    auto made = r.create(ctx, {"ranged"});
    return made.ok() ? made->op->implementation() : made.refusal().reason;
  };
  EXPECT_TRUE(contains(impl(4), "ranged: no kernel for this op type at opset 4")) << impl(4);
  EXPECT_EQ(impl(5), "old");
  EXPECT_EQ(impl(9), "old");
  EXPECT_EQ(impl(10), "new");
  EXPECT_EQ(impl(100), "new");
}

TEST(RegistryRefusal, EveryTriedBackendsReasonIsListed) {
  ops::Registry r;
  r.add(entry("picky", ops::make_factory<RefusesDouble>()));
  r.add(entry("deep", ops::make_factory<RefusesInConstructor>()));
  const std::string why =
      refusal_of(r, test_node(), {DataType::Double, {1, 2, 3}}, {"picky", "deep", "absent"});
  EXPECT_TRUE(contains(why, "; picky: float64 is not implemented")) << why;
  EXPECT_TRUE(contains(why, "; deep: rank > 2 is not handled")) << why;
  EXPECT_TRUE(contains(why, "; absent: no kernel for this op type at opset 13")) << why;
  EXPECT_LT(why.find("picky"), why.find("deep"));
  EXPECT_LT(why.find("deep"), why.find("absent"));
}

TEST(RegistryDeferredBackend, ListedAtOnceLoadedOnlyWhenAKernelIsWanted) {
  ops::Registry r;
  r.add(entry("eager", ops::make_factory<Accepts>()));
  int loads = 0;
  r.add_deferred_backend("lazy", [&](ops::Registry& target) {
    ++loads;
    target.add(entry("lazy", ops::make_factory<Tagged>(std::string("lazy:loaded"))));
  });
  EXPECT_EQ(r.backends(), (std::vector<std::string>{"eager", "lazy"}));
  EXPECT_NO_THROW(r.check_backend_names({"lazy"}, "--backend"));
  // Runs only where named: no default preference, no load by the default.
  EXPECT_EQ(r.default_preference(), (std::vector<std::string>{"eager"}));
  EXPECT_EQ(refusal_of(r, test_node(), kFloat2d, {}), "accepted by eager");
  EXPECT_EQ(loads, 0);
  const auto node = test_node();
  ops::OpContext ctx{node, {kFloat2d}};
  auto made = r.create(ctx, {"lazy", "eager"});
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->backend, "lazy");
  EXPECT_EQ(made->op->implementation(), "lazy:loaded");
  EXPECT_TRUE(r.has("", "TestOp", 13, "lazy"));
  EXPECT_EQ(r.op_types("lazy").size(), 1u);
  EXPECT_EQ(loads, 1);  // once, however often it is asked for
}

TEST(RegistryDeferredBackend, AFailedLoadIsThatBackendsRefusalAndIsRetried) {
  ops::Registry r;
  r.add(entry("eager", ops::make_factory<Accepts>()));
  int loads = 0;
  r.add_deferred_backend("lazy", [&](ops::Registry& target) {
    if (++loads == 1) throw Error("cannot load the lazy plugin 'x.so': not found");
    target.add(entry("lazy", ops::make_factory<Accepts>()));
  });
  const std::string why = refusal_of(r, test_node(), kFloat2d, {"lazy"});
  EXPECT_TRUE(contains(why, "; lazy: cannot load the lazy plugin 'x.so': not found")) << why;
  EXPECT_EQ(refusal_of(r, test_node(), kFloat2d, {"lazy"}), "accepted by lazy");
  EXPECT_EQ(loads, 2);
}
