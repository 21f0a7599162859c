// The oneDNN backend's NHWC Concat (optimized-executor layouts, common.h
// the channels-last plan hints): a per-pixel copy for every size and channel count.
// Oracle: an index loop over the channels-last buffers.
#include <gtest/gtest.h>

#include <cstring>

#include "deep/random.h"
#include "frameworks/onednn/common.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"

namespace deep500 {
namespace {

ops::NodeSpec concat_node(size_t inputs) {
  ops::NodeSpec n;
  n.name = "cat";
  n.op_type = "Concat";
  n.opset = 13;
  for (size_t i = 0; i < inputs; ++i) n.inputs.push_back("x" + std::to_string(i));
  n.outputs = {"y"};
  for (const char* k : {"axis", ops::hints::kSrcChannelsLast, ops::hints::kDstChannelsLast}) {
    ops::Attribute a;
    a.kind = ops::Attribute::Kind::Int;
    a.i = 1;
    n.attributes.set(k, a);
  }
  return n;
}

// Inputs [N, C_i, H, W] (physically NHWC); returns the implementation used.
std::string check_concat(int64_t n, std::vector<int64_t> chans, int64_t h, int64_t w) {
  frameworks::register_all();
  ops::NodeSpec spec = concat_node(chans.size());
  std::vector<Tensor> in;
  std::vector<TensorDesc> descs;
  int64_t total = 0;
  for (size_t i = 0; i < chans.size(); ++i) {
    Tensor t(DataType::Float, {n, chans[i], h, w});
    Random(11 + i).fill_uniform(t, -1, 1);
    in.push_back(t);
    descs.push_back(t.desc());
    total += chans[i];
  }
  ops::OpContext ctx{spec, descs};
  auto made = ops::Registry::global().create(ctx, {"onednn"});
  if (!made.ok()) throw Error(made.refusal().reason);
  std::vector<Tensor> out(1);
  made->op->forward(in, out);
  EXPECT_EQ(out[0].shape(), (Shape{n, total, h, w}));
  int64_t bad = 0;
  const float* y = out[0].data<float>();
  for (int64_t p = 0; p < n * h * w; ++p) {  // pixel p's channels are contiguous
    int64_t off = 0;
    for (size_t i = 0; i < chans.size(); ++i) {
      const float* x = in[i].data<float>() + p * chans[i];
      for (int64_t c = 0; c < chans[i]; ++c) bad += y[p * total + off + c] != x[c];
      off += chans[i];
    }
  }
  EXPECT_EQ(bad, 0) << "elements copied wrongly";
  // Repeated calls (the plan is cached) give the same result.
  std::vector<Tensor> again(1);
  made->op->forward(in, again);
  EXPECT_EQ(std::memcmp(again[0].raw(), out[0].raw(), out[0].nbytes()), 0);
  return made->op->implementation();
}

TEST(OnednnNhwcConcat, SmallOutput) {
  EXPECT_EQ(check_concat(1, {64, 64}, 9, 7), "onednn:concat:nhwc_copy");
}

TEST(OnednnNhwcConcat, LargeOutput) {
  // 2 x 128 x 64 x 64 floats = 4 MiB of output.
  EXPECT_EQ(check_concat(2, {64, 48, 16}, 64, 64), "onednn:concat:nhwc_copy");
}

TEST(OnednnNhwcConcat, OddChannelCounts) {
  EXPECT_EQ(check_concat(2, {66, 63, 1}, 17, 5), "onednn:concat:nhwc_copy");
}

TEST(OnednnNhwcConcat, MismatchedSpatialShapeIsAnErrorNamingTheNode) {
  frameworks::register_all();
  ops::NodeSpec spec = concat_node(2);
  std::vector<TensorDesc> descs{{DataType::Float, {1, 4, 5, 5}}, {DataType::Float, {1, 4, 5, 5}}};
  ops::OpContext ctx{spec, descs};
  auto made = ops::Registry::global().create(ctx, {"onednn"});
  ASSERT_TRUE(made.ok()) << made.refusal().reason;
  std::vector<Tensor> in{Tensor(DataType::Float, {1, 4, 5, 5}),
                         Tensor(DataType::Float, {1, 4, 6, 5})};
  std::vector<Tensor> out(1);
  try {
    made->op->forward(in, out);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cat"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[1,4,6,5]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace deep500
