// The oneDNN backend's scratch arena (frameworks/onednn/common.h): the
// buffers a plan needs only while it runs (blocked activations, reorder
// targets, scratchpads) share one block per thread instead of each plan
// owning its own. Oracle: the reference backend's Conv; repeated and
// interleaved calls must give the same bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "deep/random.h"
#include "frameworks/onednn/common.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"
#include "validation/compare.h"

namespace deep500 {
namespace {

struct ConvCase {
  Shape x, w;
  std::unique_ptr<ops::Operator> onednn, reference;
  std::vector<Tensor> in;
};

ops::NodeSpec conv_node() {
  ops::NodeSpec n;
  n.name = "conv";
  n.op_type = "Conv";
  n.opset = 13;
  n.inputs = {"x", "w"};
  n.outputs = {"y"};
  ops::Attribute pads;
  pads.kind = ops::Attribute::Kind::Ints;
  pads.ints = {1, 1, 1, 1};
  n.attributes.set("pads", pads);
  return n;
}

// A plain-layout (NCHW) 3x3 Conv: oneDNN runs it in a blocked layout, so its
// plan reorders X and Y through transient buffers.
ConvCase make_case(const Shape& x, const Shape& w, uint64_t seed) {
  static const ops::NodeSpec spec = conv_node();
  ConvCase c{x, w, nullptr, nullptr, {Tensor(DataType::Float, x), Tensor(DataType::Float, w)}};
  Random(seed).fill_uniform(c.in[0], -1, 1);
  Random(seed + 1).fill_uniform(c.in[1], -1, 1);
  ops::OpContext ctx{spec, {c.in[0].desc(), c.in[1].desc()}};
  auto d = ops::Registry::global().create(ctx, {"onednn"});
  auto r = ops::Registry::global().create(ctx, {"reference"});
  if (!d.ok() || !r.ok()) throw Error("Conv refused by oneDNN or the reference backend");
  c.onednn = std::move(d->op);
  c.reference = std::move(r->op);
  return c;
}

Tensor run(ops::Operator& op, const std::vector<Tensor>& in) {
  std::vector<Tensor> out(1);
  op.forward(in, out);
  return out[0];
}

void expect_same_bytes(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

// In a fresh thread (its arena starts empty): the larger plan sizes the
// arena, the smaller one runs inside it, and interleaving them changes no
// result.
void interleaved_convs() {
  frameworks::register_all();
  EXPECT_EQ(onednn::scratch_arena_bytes(), 0u);
  ConvCase big = make_case({2, 64, 28, 28}, {64, 64, 3, 3}, 1);
  ConvCase small = make_case({1, 32, 8, 8}, {32, 32, 3, 3}, 3);
  Tensor big_y = run(*big.onednn, big.in);
  const std::size_t arena = onednn::scratch_arena_bytes();
  // Above the blocked copies of X and Y: 2 x 64 x 28 x 28 floats each.
  EXPECT_GE(arena, 2 * big_y.nbytes());
  Tensor small_y = run(*small.onednn, small.in);
  EXPECT_EQ(onednn::scratch_arena_bytes(), arena) << "the smaller plan grew the arena";
  for (int round = 0; round < 2; ++round) {
    expect_same_bytes(run(*big.onednn, big.in), big_y);
    expect_same_bytes(run(*small.onednn, small.in), small_y);
  }
  for (ConvCase* c : {&big, &small}) {
    auto cmp = validation::compare(run(*c->onednn, c->in), run(*c->reference, c->in),
                                   {.rtol = 1e-4, .atol = 1e-4});
    EXPECT_TRUE(cmp.ok) << to_string(c->x) << ": " << cmp.message;
  }
}

TEST(OnednnScratchArena, PlansShareOneBlockPerThread) {
  std::thread t(interleaved_convs);
  t.join();
}

TEST(OnednnScratchArena, EachThreadHasItsOwn) {
  // Two threads running plans at the same time each get correct results.
  std::thread a(interleaved_convs), b(interleaved_convs);
  a.join();
  b.join();
}

}  // namespace
}  // namespace deep500
