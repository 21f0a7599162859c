// Fused operators of the ai.deep500 domain (made by the conv-gemm-fusion
// graph pass, network/passes/fusion.cc):
//   FusedConv(X, W, [B], [Z]) = activation(Conv(X, W, B) + Z)
//   FusedGemm(A, B, [C], [Z]) = activation(Gemm(A, B, C) + Z)
// Attributes: those of Conv / Gemm, plus `activation` (Relu, LeakyRelu,
// Sigmoid, Tanh, Clip, HardSigmoid; absent = none) and `activation_params`
// (LeakyRelu: alpha; HardSigmoid: alpha, beta; Clip: min, max, +-inf = open).
// Z broadcasts like Add. The reference composes the registry's own reference
// kernels (Conv 11, Gemm 13, Add 14, the activation at its latest opset), so
// a fused graph computes what the unfused one did. Backward composes the
// parts' backward the same way.
#include <limits>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

struct ActivationInfo {
  const char* op;
  int opset;
  size_t params;  // expected length of activation_params (Clip: 0 or 2)
};
constexpr ActivationInfo kActivations[] = {{"Relu", 14, 0},    {"LeakyRelu", 16, 1},
                                           {"Sigmoid", 13, 0}, {"Tanh", 13, 0},
                                           {"Clip", 13, 2},    {"HardSigmoid", 6, 2}};

ops::Attribute float_attr(float v) {
  ops::Attribute a;
  a.kind = ops::Attribute::Kind::Float;
  a.f = v;
  return a;
}

// One inner operator, re-created when its input descriptors change.
struct Inner {
  ops::NodeSpec spec;
  std::vector<TensorDesc> descs;
  std::unique_ptr<Operator> op;

  Operator& get(const Registry& r, const std::vector<TensorDesc>& d) {
    if (!op || d != descs) {
      descs = d;
      op.reset();
      ops::OpContext ctx{spec, descs};
      auto made = r.create(ctx, {"reference"});
      DEEP500_CHECK(made.ok(), made.refusal().reason);
      op = std::move(made->op);
    }
    return *op;
  }
};

class FusedOp final : public Operator {
 public:
  FusedOp(const OpContext& ctx, const Registry& r, const std::string& base, int base_opset)
      : registry_(r), node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() >= 2 && ctx.num_inputs() <= 4, node_,
                  ": expected 2 to 4 inputs (",
                  base == "Conv" ? "X, W, optional B" : "A, B, optional C", ", optional Z), got ",
                  ctx.num_inputs());
    base_inputs_ = ctx.has_input(2) ? 3 : 2;
    has_z_ = ctx.has_input(3);
    const auto& attrs = ctx.node.attributes;
    activation_ = attrs.get_string("activation", "");
    params_ = attrs.get_floats("activation_params", {});

    base_.spec = spec(ctx, base, base_opset, base_inputs_);
    for (const auto& [name, a] : attrs.all())
      if (name != "activation" && name != "activation_params") base_.spec.attributes.set(name, a);
    std::vector<TensorDesc> d(ctx.inputs.begin(), ctx.inputs.begin() + base_inputs_);
    base_.get(registry_, d);  // validates the Conv / Gemm configuration now
    if (has_z_) add_.spec = spec(ctx, "Add", 14, 2);
    if (!activation_.empty()) set_activation(ctx);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    auto base_in = in.first(base_inputs_);
    const bool last_is_base = !has_z_ && activation_.empty();
    if (last_is_base) {
      base_.get(registry_, descs_of(base_in)).forward(base_in, out);
      return;
    }
    std::vector<Tensor> y(1);
    base_.get(registry_, descs_of(base_in)).forward(base_in, y);
    if (has_z_) {
      std::vector<Tensor> sum_in = {y[0], in[3]};
      if (activation_.empty()) {
        add_.get(registry_, descs_of(sum_in)).forward(sum_in, out);
        return;
      }
      std::vector<Tensor> s(1);
      add_.get(registry_, descs_of(sum_in)).forward(sum_in, s);
      y = s;
    }
    std::vector<Tensor> act_in = activation_inputs(y[0]);
    act_.get(registry_, descs_of(act_in)).forward(act_in, out);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  // Chain rule through the parts: recompute Conv/Gemm (and the sum), then
  // activation, Add and base backward in turn.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<Tensor> gx) override {
    if (!gy[0].defined()) return;
    auto base_in = in.first(base_inputs_);
    Operator& base = base_.get(registry_, descs_of(base_in));
    DEEP500_CHECK(base.has_backward(), node_, ": the ", base_.spec.op_type,
                  " kernel has no backward");
    std::vector<Tensor> y(1);
    base.forward(base_in, y);
    std::vector<Tensor> sum_in, s = y;
    if (has_z_) {
      sum_in = {y[0], in[3]};
      add_.get(registry_, descs_of(sum_in)).forward(sum_in, s);
    }
    std::vector<Tensor> gs = {gy[0]};
    if (!activation_.empty()) {
      std::vector<Tensor> act_in = activation_inputs(s[0]);
      Operator& act = act_.get(registry_, descs_of(act_in));
      DEEP500_CHECK(act.has_backward(), node_, ": the ", activation_, " kernel has no backward");
      std::vector<Tensor> ga(act_in.size());
      act.backward(gy.first(1), act_in, out.first(1), ga);
      gs = {ga[0]};
    }
    std::vector<Tensor> gb = gs;
    if (has_z_) {
      std::vector<Tensor> gadd(2);
      add_.get(registry_, descs_of(sum_in)).backward(gs, sum_in, s, gadd);
      gb = {gadd[0]};
      if (gx.size() > 3) gx[3] = gadd[1];
    }
    std::vector<Tensor> gbase(base_inputs_);
    base.backward(gb, base_in, y, gbase);
    for (size_t i = 0; i < base_inputs_ && i < gx.size(); ++i) gx[i] = gbase[i];
  }

 private:
  static ops::NodeSpec spec(const OpContext& ctx, const std::string& op, int opset, size_t n) {
    ops::NodeSpec s;
    s.name = ctx.node.name + "/" + op;
    s.op_type = op;
    s.opset = opset;
    for (size_t i = 0; i < n; ++i) s.inputs.push_back(cat(s.name, ":in", i));
    s.outputs = {s.name + ":out"};
    s.attributes.set_owner(s.describe());
    return s;
  }

  // The activation's inputs: Clip takes its bounds as scalar inputs of the
  // data type (infinite = no bound).
  std::vector<Tensor> activation_inputs(const Tensor& x) const {
    std::vector<Tensor> v = {x};
    if (activation_ == "Clip")
      for (float b : params_)
        v.push_back(std::isinf(b) ? Tensor() : Tensor::scalar<double>(b).cast(x.dtype()));
    return v;
  }

  void set_activation(const OpContext& ctx) {
    const ActivationInfo* info = nullptr;
    for (const auto& a : kActivations)
      if (activation_ == a.op) info = &a;
    std::string known;
    for (const auto& a : kActivations) known += cat(known.empty() ? "" : ", ", a.op);
    DEEP500_CHECK(info, node_, ": attribute activation = '", activation_,
                  "' is not supported (expected one of: ", known, ")");
    DEEP500_CHECK(params_.size() == info->params || (activation_ == "Clip" && params_.empty()),
                  node_, ": activation ", activation_, " takes ", info->params,
                  " activation_params, got ", params_.size());
    if (activation_ == "Clip" && params_.empty())
      params_ = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
    act_.spec = spec(ctx, activation_, info->opset, activation_ == "Clip" ? 3 : 1);
    if (activation_ == "LeakyRelu") act_.spec.attributes.set("alpha", float_attr(params_[0]));
    if (activation_ == "HardSigmoid") {
      act_.spec.attributes.set("alpha", float_attr(params_[0]));
      act_.spec.attributes.set("beta", float_attr(params_[1]));
    }
  }

  const Registry& registry_;
  std::string node_;
  size_t base_inputs_ = 2;
  bool has_z_ = false;
  std::string activation_;
  std::vector<float> params_;
  Inner base_, add_, act_;
};

void add_fused(Registry& r, const std::string& op, const std::string& base, int base_opset) {
  r.add({ops::kDeep500Domain, op, 1, INT_MAX, "reference", "reference:" + op,
         ops::make_factory<FusedOp>(std::cref(r), base, base_opset)});
}

}  // namespace

void register_fused(Registry& r) {
  add_fused(r, "FusedConv", "Conv", 11);
  add_fused(r, "FusedGemm", "Gemm", 13);
}

}  // namespace deep500::reference
