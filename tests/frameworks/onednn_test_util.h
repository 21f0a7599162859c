// Helpers of the oneDNN backend tests (onednn_test.cc,
// onednn_vs_reference_test.cc): node building, seeded inputs, running a
// kernel, and the naive-loop oracles for Conv and Gemm.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "deep/random.h"
#include "frameworks/register_all.h"
#include "operators/registry.h"
#include "validation/compare.h"

namespace deep500::onednn_testing {

using ops::Attribute;
using ops::NodeSpec;

struct Node {
  NodeSpec spec;
  Node(const std::string& op, int opset, size_t n_in, size_t n_out = 1) {
    spec.name = "n";
    spec.op_type = op;
    spec.opset = opset;
    for (size_t i = 0; i < n_in; ++i) spec.inputs.push_back("x" + std::to_string(i));
    for (size_t i = 0; i < n_out; ++i) spec.outputs.push_back("y" + std::to_string(i));
  }
  Node& i(const std::string& k, int64_t v) {
    Attribute a;
    a.kind = Attribute::Kind::Int;
    a.i = v;
    spec.attributes.set(k, a);
    return *this;
  }
  Node& f(const std::string& k, float v) {
    Attribute a;
    a.kind = Attribute::Kind::Float;
    a.f = v;
    spec.attributes.set(k, a);
    return *this;
  }
  Node& is(const std::string& k, std::vector<int64_t> v) {
    Attribute a;
    a.kind = Attribute::Kind::Ints;
    a.ints = std::move(v);
    spec.attributes.set(k, a);
    return *this;
  }
  Node& s(const std::string& k, const std::string& v) {
    Attribute a;
    a.kind = Attribute::Kind::String;
    a.s = v;
    spec.attributes.set(k, a);
    return *this;
  }
};

inline Expected<ops::CreatedOp> create(const NodeSpec& spec, const std::vector<Tensor>& in,
                                       const std::string& backend) {
  frameworks::register_all();
  ops::OpContext ctx{spec, descs_of(in)};
  return ops::Registry::global().create(ctx, {backend});
}

inline std::unique_ptr<ops::Operator> onednn_op(const NodeSpec& spec,
                                                const std::vector<Tensor>& in) {
  auto made = create(spec, in, "onednn");
  if (!made.ok()) throw Error(made.refusal().reason);
  EXPECT_EQ(made->backend, "onednn");
  return std::move(made->op);
}

inline Tensor rnd(Shape s, uint64_t seed, double lo = -1, double hi = 1) {
  Tensor t(DataType::Float, std::move(s));
  Random(seed).fill_uniform(t, lo, hi);
  return t;
}

inline std::vector<Tensor> run(ops::Operator& op, const std::vector<Tensor>& in, size_t n_out = 1) {
  std::vector<Tensor> out(n_out);
  op.forward(in, out);
  return out;
}

inline double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    s += static_cast<double>(a.data<float>()[i]) * b.data<float>()[i];
  return s;
}

inline void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol,
                         const std::string& what) {
  auto c = validation::compare(got, want, {rtol, atol});
  EXPECT_TRUE(c.ok) << what << ": " << c.message;
}

// ---- naive oracles ---------------------------------------------------------

// 2-D convolution, NCHW/OIHW, groups, strides, dilations, pads (t,l,b,r).
inline Tensor naive_conv2d(const Tensor& x, const Tensor& w, const Tensor* b, int64_t g,
                           std::vector<int64_t> st, std::vector<int64_t> dil,
                           std::vector<int64_t> pad) {
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  int64_t oc = w.dim(0), icg = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  int64_t oh = (h + pad[0] + pad[2] - ((kh - 1) * dil[0] + 1)) / st[0] + 1;
  int64_t ow = (wd + pad[1] + pad[3] - ((kw - 1) * dil[1] + 1)) / st[1] + 1;
  Tensor y(DataType::Float, {n, oc, oh, ow});
  const float *px = x.data<float>(), *pw = w.data<float>();
  float* py = y.data<float>();
  int64_t ocg = oc / g;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t yh = 0; yh < oh; ++yh)
        for (int64_t yw = 0; yw < ow; ++yw) {
          double s = b ? b->data<float>()[o] : 0.0;
          int64_t grp = o / ocg;
          for (int64_t ci = 0; ci < icg; ++ci)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t bb = 0; bb < kw; ++bb) {
                int64_t ih = yh * st[0] - pad[0] + a * dil[0];
                int64_t iw = yw * st[1] - pad[1] + bb * dil[1];
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                s += static_cast<double>(px[((in * c + grp * icg + ci) * h + ih) * wd + iw]) *
                     pw[((o * icg + ci) * kh + a) * kw + bb];
              }
          py[((in * oc + o) * oh + yh) * ow + yw] = static_cast<float>(s);
        }
  return y;
}

// Y = alpha * A' B' + beta * C (C broadcast from [M,N], [N], [1,N], [M,1] or scalar).
inline Tensor naive_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb,
                         float alpha, float beta) {
  int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1), n = tb ? b.dim(0) : b.dim(1);
  Tensor y(DataType::Float, {m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t q = 0; q < k; ++q)
        s += static_cast<double>(a.data<float>()[ta ? q * m + i : i * k + q]) *
             b.data<float>()[tb ? j * k + q : q * n + j];
      s *= alpha;
      if (c) {
        Shape cs = c->shape();
        while (cs.size() < 2) cs.insert(cs.begin(), 1);
        int64_t ci = (cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j);
        s += beta * static_cast<double>(c->data<float>()[ci]);
      }
      y.data<float>()[i * n + j] = static_cast<float>(s);
    }
  return y;
}

}  // namespace deep500::onednn_testing
