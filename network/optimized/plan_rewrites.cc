#include "network/optimized/plan_rewrites.h"

#include <cmath>
#include <limits>

#include "deep/onnx_tensor.h"
#include "operators/plan_hints.h"

namespace deep500::network {

namespace hints = ops::hints;

namespace {

bool is_pool(const std::string& op) {
  return op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
         op == "GlobalMaxPool";
}
bool is_unary_elementwise(const std::string& op) {
  static const std::set<std::string> ops = {"Relu",        "Clip",      "LeakyRelu", "Sigmoid",
                                            "Tanh",        "HardSwish", "Elu",       "Identity",
                                            "HardSigmoid", "Abs",       "Neg"};
  return ops.count(op) != 0;
}
bool is_binary_elementwise(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
}

// A binary op the channels-last kernels can do: a 4-D result that one
// operand has the shape of (the other broadcasts), or shapes not known.
bool channels_last_binary(const onnx::NodeProto& n, const KnownShapes& shapes) {
  auto y = shapes.find(n.output(0));
  if (y == shapes.end()) return true;
  if (y->second.size() != 4) return false;
  return !shapes_differ(shapes, n.output(0), n.input(0)) ||
         !shapes_differ(shapes, n.output(0), n.input(1));
}

// A binary op's operands in the chosen layouts: both channels-last, or one
// with the other known to broadcast (a full-size operand in the other layout
// would make the kernel mix layouts element by element).
bool binary_layouts_agree(const onnx::NodeProto& n, const std::set<std::string>& on,
                          const KnownShapes& shapes) {
  if (n.input_size() != 2) return false;
  const bool a = on.count(n.input(0)) != 0, b = on.count(n.input(1)) != 0;
  auto broadcasts = [&](int k) { return shapes_differ(shapes, n.output(0), n.input(k)); };
  return (a && b) || (a && broadcasts(1)) || (b && broadcasts(0));
}

}  // namespace

// Chooses the values that Conv/pooling/Concat nodes exchange channels-last
// (NHWC): a value qualifies when a 2-D Conv or pooling (or a chain of
// elementwise ops fed by such values) produces it, every reader is a
// Conv/pooling (as X) or an elementwise op whose output qualifies too, and it
// is not a graph output. A binary elementwise op qualifies with one such
// operand (the other may broadcast: a squeeze-excitation gate). Conv,
// pooling, Concat and binary nodes get the channels-last hints of
// operators/plan_hints.h (unary ones pass the layout through); the chosen
// value names are returned.
bool shapes_differ(const KnownShapes& shapes, const std::string& a, const std::string& b) {
  auto x = shapes.find(a), y = shapes.find(b);
  return x != shapes.end() && y != shapes.end() && x->second != y->second;
}

bool same_known_shape(const KnownShapes& shapes, const std::string& a, const std::string& b) {
  auto x = shapes.find(a), y = shapes.find(b);
  return x != shapes.end() && y != shapes.end() && x->second == y->second;
}

std::set<std::string> assign_nhwc(const std::vector<onnx::NodeProto*>& nodes,
                                  const std::set<std::string>& graph_outputs,
                                  const std::function<bool(const std::string&)>& rank4_constant,
                                  const KnownShapes& shapes) {
  auto default_domain = [](const onnx::NodeProto& n) {
    return n.domain().empty() || n.domain() == "ai.onnx";
  };
  std::map<std::string, std::vector<std::pair<const onnx::NodeProto*, int>>> readers;
  for (const auto* n : nodes)
    for (int k = 0; k < n->input_size(); ++k) readers[n->input(k)].push_back({n, k});
  std::set<std::string> on;
  auto all_on = [&](const onnx::NodeProto& n) {
    for (const auto& in : n.input())
      if (!on.count(in)) return false;
    return n.input_size() > 0;
  };
  auto channel_concat = [](const onnx::NodeProto& n) {
    for (const auto& a : n.attribute())
      if (a.name() == "axis") return a.i() == 1 || a.i() == -3;
    return false;
  };
  // Candidates, in graph order (producers precede readers).
  for (const auto* n : nodes) {
    if (!default_domain(*n) || n->output_size() < 1) continue;
    const std::string& op = n->op_type();
    bool cand = false;
    if (op == "Conv")
      cand = n->input_size() >= 2 && rank4_constant(n->input(1));
    else if (is_pool(op))
      cand = n->output_size() == 1 && on.count(n->input(0));
    else if (is_inference_batchnorm(*n))
      cand = on.count(n->input(0)) != 0;
    else if (is_unary_elementwise(op))
      cand = on.count(n->input(0)) != 0;
    else if (is_binary_elementwise(op))
      cand = binary_layouts_agree(*n, on, shapes) && channels_last_binary(*n, shapes);
    else if (op == "Concat")
      cand = channel_concat(*n) && all_on(*n);
    if (cand) on.insert(n->output(0));
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = on.begin(); it != on.end();) {
      bool keep = !graph_outputs.count(*it);
      for (const auto& [r, k] : readers[*it]) {
        if (!keep) break;
        const std::string& op = r->op_type();
        if (!default_domain(*r))
          keep = false;
        else if ((op == "Conv" || is_pool(op)) && k == 0)
          keep = true;
        else if (op == "Conv" && k == 3)
          keep = true;  // the post-op summand
        else if ((is_unary_elementwise(op) || is_inference_batchnorm(*r)) && k == 0)
          keep = on.count(r->output(0)) != 0;
        else if (is_binary_elementwise(op))
          keep = on.count(r->output(0)) != 0;  // the other operand may broadcast
        else if (op == "Concat")
          keep = on.count(r->output(0)) && all_on(*r);
        else
          keep = false;
      }
      if (keep) {
        ++it;
      } else {
        it = on.erase(it);
        changed = true;
      }
    }
    // An elementwise output stays NHWC only while its data inputs do.
    for (const auto* n : nodes) {
      if (n->output_size() < 1 || !on.count(n->output(0))) continue;
      const std::string& op = n->op_type();
      bool ok = true;
      if (is_unary_elementwise(op) || is_inference_batchnorm(*n)) ok = on.count(n->input(0)) != 0;
      if (is_binary_elementwise(op)) ok = binary_layouts_agree(*n, on, shapes);
      if (op == "Concat") ok = all_on(*n);
      if (!ok) {
        on.erase(n->output(0));
        changed = true;
      }
    }
  }
  auto set_flag = [](onnx::NodeProto* n, const char* name) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(1);
  };
  for (auto* n : nodes) {
    if (default_domain(*n) && n->op_type() == "Concat" && on.count(n->output(0))) {
      set_flag(n, hints::kSrcChannelsLast);
      set_flag(n, hints::kDstChannelsLast);
      continue;
    }
    if (default_domain(*n) && is_binary_elementwise(n->op_type()) && on.count(n->output(0))) {
      if (on.count(n->input(0))) set_flag(n, hints::kSrcChannelsLast);
      if (on.count(n->input(1))) set_flag(n, hints::kSrc1ChannelsLast);
      set_flag(n, hints::kDstChannelsLast);
      continue;
    }
    if (!default_domain(*n) ||
        !(n->op_type() == "Conv" || is_pool(n->op_type()) || is_inference_batchnorm(*n)))
      continue;
    if (n->input_size() > 0 && on.count(n->input(0))) set_flag(n, hints::kSrcChannelsLast);
    if (n->output_size() > 0 && on.count(n->output(0))) set_flag(n, hints::kDstChannelsLast);
    if (n->op_type() == "Conv" && n->input_size() > 3 && on.count(n->input(3)))
      set_flag(n, hints::kSumChannelsLast);
  }
  return on;
}

// Conv -> BatchNormalization (inference form) pairs with constant float
// parameters whose Conv output feeds only the BatchNormalization: the scale
// and shift are folded into the convolution's weights and bias
// (network/batchnorm_folding.h).
std::map<int, FoldedConv> fold_batchnorms(const onnx::GraphProto& g,
                                          const ConstantLookup& constant_any) {
  std::map<std::string, int> uses;
  std::map<std::string, int> consumer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& in : g.node(i).input()) {
      ++uses[in];
      consumer[in] = i;
    }
  for (const auto& o : g.output()) uses[o.name()] += 2;
  auto constant = [&](const std::string& name) -> const Tensor* {
    const Tensor* t = name.empty() ? nullptr : constant_any(name);
    return t && t->dtype() == DataType::Float ? t : nullptr;
  };
  std::map<int, FoldedConv> out;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& conv = g.node(i);
    if (conv.op_type() != "Conv" || !(conv.domain().empty() || conv.domain() == "ai.onnx") ||
        conv.input_size() < 2 || conv.output_size() != 1 || uses[conv.output(0)] != 1)
      continue;
    const auto& bn = g.node(consumer[conv.output(0)]);
    if (!is_inference_batchnorm(bn) || bn.input(0) != conv.output(0)) continue;
    const Tensor* w = constant(conv.input(1));
    const bool has_bias = conv.input_size() > 2 && !conv.input(2).empty();
    const Tensor* b = has_bias ? constant(conv.input(2)) : nullptr;
    const Tensor *scale = constant(bn.input(1)), *shift = constant(bn.input(2)),
                 *mean = constant(bn.input(3)), *var = constant(bn.input(4));
    if (!w || w->rank() < 3 || !scale || !shift || !mean || !var || (has_bias && !b)) continue;
    float eps = 1e-5f;
    for (const auto& a : bn.attribute())
      if (a.name() == "epsilon") eps = a.f();
    const auto factors = batchnorm_factors(*scale, *shift, *mean, *var, eps, w->dim(0));
    const auto folded = factors ? fold_into_conv(*w, b, *factors) : std::nullopt;
    if (!folded) continue;
    FoldedConv f;
    f.bn_index = consumer[conv.output(0)];
    f.conv = conv;
    const std::string wn = bn.output(0) + "/folded_W", bnn = bn.output(0) + "/folded_B";
    f.conv.clear_input();
    f.conv.add_input(conv.input(0));
    f.conv.add_input(wn);
    f.conv.add_input(bnn);
    f.conv.set_output(0, bn.output(0));
    f.constants = {{wn, folded->weights}, {bnn, folded->bias}};
    out[i] = std::move(f);
  }
  return out;
}

}  // namespace deep500::network
