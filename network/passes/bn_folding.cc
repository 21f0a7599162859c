// bn-folding: an inference-mode BatchNormalization whose input comes from a
// Conv or Gemm that nothing else reads is folded into that node's weights:
//   s = scale / sqrt(var + eps),  W' = W * s (per output channel),
//   b' = (b - mean) * s + B_bn.
// Gemm (Y = alpha A op(B) + beta C, channels = columns of Y): the columns of
// op(B) are scaled (rows of B when transB=1) and C' = (beta C - mean) s + B_bn,
// beta := 1. Weights, biases and BN parameters must be constants of a
// floating type; the math runs in double. New initializers get fresh names
// (the old ones may be shared; dead-code-elimination drops them when unused).
#include <cmath>

#include "network/batchnorm_folding.h"
#include "network/passes/graph_utils.h"

namespace deep500::network::passes {
namespace {

bool floating(const Tensor& t) {
  return is_floating(t.dtype());
}

Tensor from_doubles(const std::vector<double>& v, const Shape& shape, DataType dtype) {
  return Tensor::from_vector<double>(shape, v).cast(dtype);
}

void set_attr_float(onnx::NodeProto& n, const std::string& name, float v) {
  erase_attr(n, name);
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void set_input(onnx::NodeProto& n, int i, const std::string& name) {
  while (n.input_size() <= i) n.add_input("");
  n.set_input(i, name);
}

class BnFolding final : public GraphPass {
 public:
  std::string name() const override { return "bn-folding"; }
  std::string description() const override {
    return "folds inference BatchNormalization into the Conv/Gemm that feeds it";
  }

  PassStats run(Model& model) override {
    PassStats stats;
    auto& g = *model.proto.mutable_graph();
    Constants constants(model);
    const Uses uses = collect_uses(g);
    NameGen names(g);
    std::map<std::string, int> producer;
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& o : g.node(i).output()) producer[o] = i;

    std::vector<bool> remove(static_cast<size_t>(g.node_size()), false);
    int into_conv = 0, into_gemm = 0;
    for (int j = 0; j < g.node_size(); ++j) {
      const onnx::NodeProto& bn = g.node(j);
      if (!is_inference_batchnorm(bn)) continue;
      auto p = producer.find(bn.input(0));
      if (p == producer.end() || !uses.sole_reader(bn.input(0), j)) continue;
      onnx::NodeProto& prod = *g.mutable_node(p->second);
      const bool conv = is_op(prod, "Conv"), gemm = is_op(prod, "Gemm");
      if (!(conv || gemm) || prod.output_size() != 1) continue;
      bool ok = prod.input_size() >= 2 && constants.has(prod.input(1));
      for (int k = 1; k < 5; ++k) ok = ok && constants.has(bn.input(k));
      const bool has_bias = prod.input_size() > 2 && !prod.input(2).empty();
      ok = ok && (!has_bias || constants.has(prod.input(2)));
      if (!ok) continue;
      const Tensor& w = constants.get(prod.input(1));
      if (!floating(w) || (has_bias && !floating(constants.get(prod.input(2))))) continue;
      const int64_t channels =
          conv ? (w.rank() > 0 ? w.dim(0) : 0)
               : (w.rank() == 2 ? w.dim(attr_int(prod, "transB", 0) ? 0 : 1) : 0);
      const auto factors = batchnorm_factors(constants.get(bn.input(1)), constants.get(bn.input(2)),
                                             constants.get(bn.input(3)), constants.get(bn.input(4)),
                                             attr_float(bn, "epsilon", 1e-5f), channels);
      if (!factors) continue;
      const bool done = conv ? fold_conv(model, prod, w, has_bias, *factors, constants, names)
                             : fold_gemm(model, prod, w, has_bias, *factors, constants, names);
      if (!done) continue;
      prod.set_output(0, bn.output(0));
      producer[bn.output(0)] = p->second;
      remove[static_cast<size_t>(j)] = true;
      ++(conv ? into_conv : into_gemm);
      ++stats.nodes_removed;
      ++stats.nodes_changed;
    }
    remove_nodes(g, remove);
    prune_value_info(g);
    if (into_conv) stats.note(cat("folded ", into_conv, " BatchNormalization into Conv"));
    if (into_gemm) stats.note(cat("folded ", into_gemm, " BatchNormalization into Gemm"));
    return stats;
  }

 private:
  static bool fold_conv(Model& model, onnx::NodeProto& conv, const Tensor& w, bool has_bias,
                        const BatchNormFactors& f, Constants& constants, NameGen& names) {
    const auto folded = fold_into_conv(w, has_bias ? &constants.get(conv.input(2)) : nullptr, f);
    if (!folded) return false;
    const std::string wn = names.make(conv.input(1) + "_bnfold");
    const std::string bn =
        names.make((has_bias ? conv.input(2) : conv.input(1) + "_bias") + "_bnfold");
    add_initializer(model, folded->weights, wn);
    add_initializer(model, folded->bias, bn);
    constants.add(wn, folded->weights);
    constants.add(bn, folded->bias);
    set_input(conv, 1, wn);
    set_input(conv, 2, bn);
    return true;
  }

  // Gemm's channels are the columns of Y: the columns of op(B) scale.
  static bool fold_gemm(Model& model, onnx::NodeProto& gemm, const Tensor& w, bool has_c,
                        const BatchNormFactors& f, Constants& constants, NameGen& names) {
    if (w.rank() != 2) return false;
    const bool trans_b = attr_int(gemm, "transB", 0) != 0;
    const int64_t n = trans_b ? w.dim(0) : w.dim(1);
    const std::vector<double>&s = f.scale, &t = f.shift;
    std::vector<double> wv = w.to_double_vector();
    for (int64_t r = 0; r < w.dim(0); ++r)
      for (int64_t c = 0; c < w.dim(1); ++c) wv[r * w.dim(1) + c] *= s[trans_b ? r : c];
    // C' has the broadcast shape of C and [N]; the channel is its last index.
    Shape cshape = {n};
    std::vector<double> cv;
    const double beta = attr_float(gemm, "beta", 1.0f);
    if (has_c) {
      const Tensor& c = constants.get(gemm.input(2));
      if (c.rank() > 2) return false;
      try {
        cshape = broadcast_shapes(c.shape(), {n});
      } catch (const Error&) {
        return false;
      }
      if (cshape.back() != n) return false;
      const std::vector<double> c0 = c.to_double_vector();
      MultiIndex it(cshape, {broadcast_strides(c.shape(), cshape)});
      for (; !it.done(); it.next()) cv.push_back(beta * c0[it.offset(0)]);
    } else {
      cv.assign(static_cast<size_t>(n), 0.0);
    }
    for (size_t i = 0; i < cv.size(); ++i) cv[i] = cv[i] * s[i % n] + t[i % n];
    const Tensor w2 = from_doubles(wv, w.shape(), w.dtype());
    const Tensor c2 = from_doubles(cv, cshape, w.dtype());
    const std::string wn = names.make(gemm.input(1) + "_bnfold");
    const std::string cn =
        names.make((has_c ? gemm.input(2) : gemm.input(1) + "_bias") + "_bnfold");
    add_initializer(model, w2, wn);
    add_initializer(model, c2, cn);
    constants.add(wn, w2);
    constants.add(cn, c2);
    set_input(gemm, 1, wn);
    set_input(gemm, 2, cn);
    set_attr_float(gemm, "beta", 1.0f);
    if (opset_of(model, gemm) < 7) set_attr_int(gemm, "broadcast", 1);
    return true;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_bn_folding() {
  return std::make_unique<BnFolding>();
}

}  // namespace deep500::network::passes
