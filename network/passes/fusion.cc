// conv-gemm-fusion: Conv or Gemm followed (through values nothing else reads) by
//   up to two Adds: a bias-like constant (folded into B / C) and/or any other
//   summand Z (a residual: Conv -> Add(shortcut) -> Relu, as in ResNet), then
//   optionally one activation (Relu, LeakyRelu, Sigmoid, Tanh, Clip, HardSigmoid)
// becomes one ai.deep500 FusedConv / FusedGemm node:
//   Y = activation(Conv(X, W, B) + Z)      (Gemm likewise, inputs A, B, C, Z)
// with the base op's attributes plus `activation` (op type) and
// `activation_params` (LeakyRelu: alpha; HardSigmoid: alpha, beta; Clip: min,
// max). Z broadcasts as in Add. The fused node takes the place of the last node
// of the chain so every input is defined before it. A chain that only folds a
// bias keeps its Conv/Gemm (with the new bias) instead.
#include <limits>

#include "network/passes/graph_utils.h"

namespace deep500::network::passes {
namespace {

constexpr const char* kActivations[] = {"Relu", "LeakyRelu", "Sigmoid",
                                        "Tanh", "Clip",      "HardSigmoid"};

struct Chain {
  std::vector<int> nodes;  // head first
  std::string out;         // value the chain produces
  std::string bias;        // new bias / C initializer ("" = unchanged)
  std::string z;
  std::string activation;
  std::vector<float> params;
  bool absorbed_add = false;
};

class ConvGemmFusion final : public GraphPass {
 public:
  std::string name() const override { return "conv-gemm-fusion"; }
  std::string description() const override {
    return "fuses Conv/Gemm + bias/residual Add + activation into ai.deep500 FusedConv/FusedGemm";
  }

  PassStats run(Model& model) override {
    PassStats stats;
    auto& g = *model.proto.mutable_graph();
    Constants constants(model);
    const Uses uses = collect_uses(g);
    NameGen names(g);
    std::vector<bool> taken(static_cast<size_t>(g.node_size()), false);
    std::vector<bool> remove(taken.size(), false);
    int fused_conv = 0, fused_gemm = 0, biases = 0, residuals = 0;
    for (int i = 0; i < g.node_size(); ++i) {
      onnx::NodeProto& head = *g.mutable_node(i);
      const bool conv = is_op(head, "Conv");
      if (!(conv || is_op(head, "Gemm")) || head.output_size() != 1 || taken[i]) continue;
      Chain c = follow(model, i, conv, constants, uses, taken, names);
      if (c.nodes.size() == 1) continue;
      for (int k : c.nodes) taken[k] = true;
      biases += !c.bias.empty();
      residuals += !c.z.empty();
      if (c.z.empty() && c.activation.empty()) {
        // Only bias Adds: keep the base op with its new bias.
        set_bias(model, head, c.bias);
        head.set_output(0, c.out);
        for (size_t k = 1; k < c.nodes.size(); ++k) remove[c.nodes[k]] = true;
        stats.nodes_changed++;
        stats.nodes_removed += static_cast<int>(c.nodes.size()) - 1;
        continue;
      }
      onnx::NodeProto fused = head;
      set_bias(model, fused, c.bias);
      fused.set_domain(kDeep500Domain);
      fused.set_op_type(conv ? "FusedConv" : "FusedGemm");
      if (fused.name().empty()) fused.set_name(c.out);
      erase_attr(fused, "broadcast");  // legacy Gemm (< 7): numpy rules apply
      if (!c.z.empty()) {
        while (fused.input_size() < 3) fused.add_input("");
        fused.add_input(c.z);
      }
      if (!c.activation.empty()) {
        auto* a = fused.add_attribute();
        a->set_name("activation");
        a->set_type(onnx::AttributeProto::STRING);
        a->set_s(c.activation);
        if (!c.params.empty()) {
          auto* p = fused.add_attribute();
          p->set_name("activation_params");
          p->set_type(onnx::AttributeProto::FLOATS);
          for (float v : c.params) p->add_floats(v);
        }
      }
      fused.set_output(0, c.out);
      *g.mutable_node(c.nodes.back()) = fused;
      for (size_t k = 0; k + 1 < c.nodes.size(); ++k) remove[c.nodes[k]] = true;
      stats.nodes_removed += static_cast<int>(c.nodes.size());
      stats.nodes_added++;
      ++(conv ? fused_conv : fused_gemm);
    }
    remove_nodes(g, remove);
    prune_value_info(g);
    if (fused_conv || fused_gemm) import_deep500_domain(model);
    if (fused_conv) stats.note(cat(fused_conv, " FusedConv"));
    if (fused_gemm) stats.note(cat(fused_gemm, " FusedGemm"));
    if (biases) stats.note(cat(biases, " bias Add folded"));
    if (residuals) stats.note(cat(residuals, " residual Add fused"));
    return stats;
  }

 private:
  static void set_bias(Model& model, onnx::NodeProto& n, const std::string& bias) {
    if (bias.empty()) return;
    while (n.input_size() < 3) n.add_input("");
    n.set_input(2, bias);
    if (n.op_type() == "Gemm" || n.op_type() == "FusedGemm") {
      erase_attr(n, "beta");  // folded into the new C
      if (opset_of(model, n) < 7 && n.op_type() == "Gemm") set_attr_int(n, "broadcast", 1);
    }
  }

  // The node that alone reads `value`, if any and not yet part of a chain.
  static int sole_reader(const Uses& uses, const std::string& value,
                         const std::vector<bool>& taken) {
    auto it = uses.readers.find(value);
    if (it == uses.readers.end() || it->second.size() != 1) return -1;
    const int r = it->second[0];
    return uses.sole_reader(value, r) && !taken[r] ? r : -1;
  }

  static Chain follow(Model& model, int head_index, bool conv, Constants& constants,
                      const Uses& uses, const std::vector<bool>& taken, NameGen& names) {
    const auto& g = model.graph();
    const onnx::NodeProto& head = g.node(head_index);
    Chain c;
    c.nodes.push_back(head_index);
    c.out = head.output(0);
    for (int step = 0; step < 2; ++step) {
      const int r = sole_reader(uses, c.out, taken);
      if (r < 0) return c;
      const onnx::NodeProto& add = g.node(r);
      if (!is_op(add, "Add") || add.input_size() != 2 || add.input(0) == add.input(1)) break;
      const bool first = add.input(0) == c.out;
      const std::string other = first ? add.input(1) : add.input(0);
      // Before opset 7, broadcasting Adds follow legacy rules: B (input 1) is
      // suffix-matched to A, or aligned at `axis`.
      const bool legacy = opset_of(model, add) < 7 && attr_int(add, "broadcast", 0) != 0;
      if (legacy && !first) break;
      const int64_t axis = legacy ? attr_int(add, "axis", -1) : -1;
      if (axis >= 0 && axis != 1) break;
      std::string bias;
      if (c.bias.empty() && constants.has(other))
        bias = fold_bias(model, head, c, conv, constants.get(other), axis == 1, constants, names);
      if (!bias.empty()) {
        c.bias = bias;
      } else if (c.z.empty() && axis < 0) {
        c.z = other;
      } else {
        break;
      }
      c.nodes.push_back(r);
      c.out = add.output(0);
    }
    const int r = sole_reader(uses, c.out, taken);
    if (r < 0) return c;
    const onnx::NodeProto& act = g.node(r);
    if (act.input_size() < 1 || act.input(0) != c.out || act.output_size() != 1) return c;
    for (const char* name : kActivations)
      if (is_op(act, name) && activation_params(model, act, constants, c.params)) {
        c.activation = name;
        c.nodes.push_back(r);
        c.out = act.output(0);
        break;
      }
    return c;
  }

  static bool activation_params(const Model& model, const onnx::NodeProto& act,
                                Constants& constants, std::vector<float>& params) {
    const std::string& op = act.op_type();
    params.clear();
    if (op == "LeakyRelu") params = {attr_float(act, "alpha", 0.01f)};
    if (op == "HardSigmoid")
      params = {attr_float(act, "alpha", 0.2f), attr_float(act, "beta", 0.5f)};
    if (op != "Clip") return true;
    const float inf = std::numeric_limits<float>::infinity();
    if (opset_of(model, act) < 11) {
      params = {attr_float(act, "min", -inf), attr_float(act, "max", inf)};
      return true;
    }
    params = {-inf, inf};
    for (int k = 1; k <= 2; ++k) {
      if (act.input_size() <= k || act.input(k).empty()) continue;
      if (!constants.has(act.input(k))) return false;
      const Tensor& t = constants.get(act.input(k));
      if (t.numel() != 1) return false;
      params[k - 1] = static_cast<float>(t.at_as_double(0));
    }
    return true;
  }

  // Folds the constant summand `add` into the head's bias when it only adds
  // per output channel; returns the new bias initializer or "".
  static std::string fold_bias(Model& model, const onnx::NodeProto& head, const Chain& c, bool conv,
                               const Tensor& add, bool legacy_axis1, Constants& constants,
                               NameGen& names) {
    if (head.input_size() < 2 || !constants.has(head.input(1))) return "";
    const Tensor& w = constants.get(head.input(1));
    if (!is_floating(w.dtype()) || add.dtype() != w.dtype()) return "";
    const bool has_bias = head.input_size() > 2 && !head.input(2).empty();
    if (has_bias && !constants.has(head.input(2))) return "";
    const Shape& s = add.shape();
    if (conv) {
      // Output [N, M, spatial...]: the summand may vary along axis 1 only.
      if (w.rank() < 3) return "";
      const int64_t m = w.dim(0), rank = w.rank();
      bool ok = legacy_axis1 ? s.size() == 1 && (s[0] == m || s[0] == 1)
                             : static_cast<int64_t>(s.size()) <= rank;
      for (size_t k = 0; ok && !legacy_axis1 && k < s.size(); ++k) {
        const int64_t axis = rank - static_cast<int64_t>(s.size()) + static_cast<int64_t>(k);
        ok = s[k] == 1 || (axis == 1 && s[k] == m);
      }
      if (!ok) return "";
      std::vector<double> b(static_cast<size_t>(m), 0.0);
      if (has_bias) b = constants.get(head.input(2)).to_double_vector();
      if (static_cast<int64_t>(b.size()) != m) return "";
      const std::vector<double> a = add.to_double_vector();
      for (int64_t k = 0; k < m; ++k) b[k] += a.size() == 1 ? a[0] : a[k];
      Tensor t = Tensor::from_vector<double>({m}, b).cast(w.dtype());
      return add_bias(model, t, (has_bias ? head.input(2) : head.input(1) + "_bias"), constants,
                      names);
    }
    // Gemm output [rows, N]: the summand may vary along columns only.
    if (w.rank() != 2) return "";
    const int64_t n = attr_int(head, "transB", 0) != 0 ? w.dim(0) : w.dim(1);
    const bool ok = s.size() <= 2 && (s.empty() || s.back() == 1 || s.back() == n) &&
                    (s.size() < 2 || s[0] == 1);
    if (!ok) return "";
    Shape cshape = s;
    std::vector<double> cv = add.to_double_vector();
    if (has_bias) {
      const Tensor& old = constants.get(head.input(2));
      if (old.rank() > 2) return "";
      try {
        cshape = broadcast_shapes(old.shape(), s);
      } catch (const Error&) {
        return "";
      }
      if (!cshape.empty() && cshape.back() != 1 && cshape.back() != n) return "";
      const double beta = attr_float(head, "beta", 1.0f);
      const std::vector<double> o = old.to_double_vector();
      std::vector<double> sum;
      MultiIndex it(cshape, {broadcast_strides(old.shape(), cshape), broadcast_strides(s, cshape)});
      for (; !it.done(); it.next()) sum.push_back(beta * o[it.offset(0)] + cv[it.offset(1)]);
      cv = sum;
    }
    Tensor t = Tensor::from_vector<double>(cshape, cv).cast(w.dtype());
    return add_bias(model, t, (has_bias ? head.input(2) : head.input(1) + "_bias"), constants,
                    names);
  }

  static std::string add_bias(Model& model, const Tensor& t, const std::string& base,
                              Constants& constants, NameGen& names) {
    const std::string name = names.make(base + "_fused");
    add_initializer(model, t, name);
    constants.add(name, t);
    return name;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_conv_gemm_fusion() {
  return std::make_unique<ConvGemmFusion>();
}

}  // namespace deep500::network::passes
