// Control flow: If, Loop, Scan. Body graphs run through the SubgraphRunner
// the executor supplies (lexical scoping is the runner's job). Only tensor
// values are supported; sequence/optional-typed bodies are not.
#include <cstring>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

// Copies `n` elements of any dtype (strings included) between buffers.
void copy_elements(DataType dt, const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off,
                   int64_t n) {
  dispatch_all(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = src.data<T>() + src_off;
    T* d = dst.data<T>() + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
  });
}

// Split of a shape around `axis`: outer * n * inner elements.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
  AxisSplit(const Shape& s, int64_t axis) {
    for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
      if (i < axis)
        outer *= s[i];
      else if (i == axis)
        n = s[i];
      else
        inner *= s[i];
    }
  }
};

// The slice `index` of `t` along `axis` (that axis removed).
Tensor take_slice(const Tensor& t, int64_t axis, int64_t index) {
  Shape s = t.shape();
  AxisSplit sp(s, axis);
  s.erase(s.begin() + axis);
  Tensor out(t.dtype(), s);
  for (int64_t o = 0; o < sp.outer; ++o)
    copy_elements(t.dtype(), t, (o * sp.n + index) * sp.inner, out, o * sp.inner, sp.inner);
  return out;
}

// Stacks equally shaped `parts` along a new `axis`.
Tensor stack(const std::vector<Tensor>& parts, int64_t axis, DataType empty_dtype,
             const std::string& what) {
  if (parts.empty()) return Tensor(empty_dtype, {0});
  Shape s = parts[0].shape();
  for (const auto& p : parts)
    DEEP500_CHECK(p.shape() == s && p.dtype() == parts[0].dtype(), what,
                  ": scan output changes shape/type between iterations: ",
                  to_string(parts[0].desc()), " vs ", to_string(p.desc()));
  axis = normalize_axis(axis, static_cast<int64_t>(s.size()) + 1, what + " scan output axis");
  s.insert(s.begin() + axis, static_cast<int64_t>(parts.size()));
  Tensor out(parts[0].dtype(), s);
  AxisSplit sp(s, axis);
  for (int64_t k = 0; k < sp.n; ++k)
    for (int64_t o = 0; o < sp.outer; ++o)
      copy_elements(out.dtype(), parts[k], o * sp.inner, out, (o * sp.n + k) * sp.inner, sp.inner);
  return out;
}

DataType declared_dtype(const onnx::ValueInfoProto& vi) {
  if (vi.type().has_tensor_type() && vi.type().tensor_type().elem_type() != 0)
    return static_cast<DataType>(vi.type().tensor_type().elem_type());
  return DataType::Float;
}

bool truth(const Tensor& t, const std::string& what) {
  DEEP500_CHECK(t.numel() == 1, what, ": condition must have exactly one element, got shape ",
                to_string(t.shape()));
  return t.at_as_double(0) != 0;
}

class IfOp final : public Operator {
 public:
  explicit IfOp(const OpContext& ctx) : node_(ctx.node.describe()), runner_(ctx.subgraphs) {
    then_ = ctx.node.attributes.get_graph("then_branch");
    else_ = ctx.node.attributes.get_graph("else_branch");
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input (cond), got ",
                  ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    DEEP500_CHECK(runner_, node_, ": needs a subgraph runner (run it inside a graph executor)");
    auto results = runner_->run(truth(in[0], node_) ? *then_ : *else_, {});
    DEEP500_CHECK(results.size() == out.size(), node_, ": branch produced ", results.size(),
                  " outputs, node has ", out.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = results[i];
  }

 private:
  std::string node_;
  ops::SubgraphRunner* runner_;
  std::shared_ptr<const onnx::GraphProto> then_, else_;
};

class LoopOp final : public Operator {
 public:
  explicit LoopOp(const OpContext& ctx) : node_(ctx.node.describe()), runner_(ctx.subgraphs) {
    body_ = ctx.node.attributes.get_graph("body");
    DEEP500_CHECK(ctx.num_inputs() >= 2, node_, ": expected inputs (M, cond, v_initial...)");
    carried_ = ctx.num_inputs() - 2;
    DEEP500_CHECK(body_->input_size() == static_cast<int>(carried_ + 2), node_, ": body must take ",
                  carried_ + 2, " inputs, declares ", body_->input_size());
    DEEP500_CHECK(body_->output_size() >= static_cast<int>(carried_ + 1), node_,
                  ": body must produce at least ", carried_ + 1, " outputs");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    DEEP500_CHECK(runner_, node_, ": needs a subgraph runner (run it inside a graph executor)");
    const Tensor* m = ops::optional_input(in, 0);
    const Tensor* c = ops::optional_input(in, 1);
    DEEP500_CHECK(m || c, node_, ": neither M nor cond given (the loop would never end)");
    int64_t max_trip = m ? static_cast<int64_t>(m->at_as_double(0)) : INT64_MAX;
    bool cond = c ? truth(*c, node_) : true;
    std::vector<Tensor> state(in.begin() + 2, in.end());
    const size_t scans = body_->output_size() - 1 - carried_;
    std::vector<std::vector<Tensor>> scanned(scans);
    for (int64_t i = 0; i < max_trip && cond; ++i) {
      std::vector<Tensor> args = {Tensor::scalar<int64_t>(i), Tensor::scalar<bool>(cond)};
      args.insert(args.end(), state.begin(), state.end());
      auto res = runner_->run(*body_, args);
      cond = truth(res[0], node_ + " body condition");
      for (size_t k = 0; k < carried_; ++k) state[k] = res[1 + k];
      for (size_t k = 0; k < scans; ++k) scanned[k].push_back(res[1 + carried_ + k]);
    }
    DEEP500_CHECK(out.size() <= carried_ + scans, node_, ": node has more outputs than the body");
    for (size_t k = 0; k < carried_ && k < out.size(); ++k) out[k] = state[k];
    for (size_t k = 0; k < scans && carried_ + k < out.size(); ++k)
      out[carried_ + k] = stack(
          scanned[k], 0, declared_dtype(body_->output(static_cast<int>(1 + carried_ + k))), node_);
  }

 private:
  std::string node_;
  ops::SubgraphRunner* runner_;
  std::shared_ptr<const onnx::GraphProto> body_;
  size_t carried_ = 0;
};

// Scan, opset 9+ (no batch axis) and opset 8 (batch axis 0, optional
// sequence_lens first, scan axis 1 of each batch row).
class ScanOp final : public Operator {
 public:
  explicit ScanOp(const OpContext& ctx) : node_(ctx.node.describe()), runner_(ctx.subgraphs) {
    const auto& at = ctx.node.attributes;
    body_ = at.get_graph("body");
    v8_ = ctx.node.opset < 9;
    const int64_t first = v8_ ? 1 : 0;
    scan_inputs_ = at.get_int("num_scan_inputs");
    states_ = static_cast<int64_t>(ctx.num_inputs()) - first - scan_inputs_;
    DEEP500_CHECK(states_ >= 0 && scan_inputs_ >= 1, node_, ": num_scan_inputs ", scan_inputs_,
                  " does not fit ", ctx.num_inputs(), " inputs");
    scan_outputs_ = body_->output_size() - states_;
    DEEP500_CHECK(scan_outputs_ >= 0 && body_->input_size() == states_ + scan_inputs_, node_,
                  ": body signature does not match ", states_, " states and ", scan_inputs_,
                  " scan inputs");
    in_axes_ = at.get_ints("scan_input_axes", std::vector<int64_t>(scan_inputs_, 0));
    in_dirs_ = at.get_ints(v8_ ? "directions" : "scan_input_directions",
                           std::vector<int64_t>(scan_inputs_, 0));
    out_axes_ = at.get_ints("scan_output_axes", std::vector<int64_t>(scan_outputs_, 0));
    out_dirs_ = at.get_ints("scan_output_directions", std::vector<int64_t>(scan_outputs_, 0));
    DEEP500_CHECK(static_cast<int64_t>(in_axes_.size()) == scan_inputs_ &&
                      static_cast<int64_t>(in_dirs_.size()) == scan_inputs_ &&
                      static_cast<int64_t>(out_axes_.size()) == scan_outputs_ &&
                      static_cast<int64_t>(out_dirs_.size()) == scan_outputs_,
                  node_, ": scan axis/direction attributes must have one entry per scan value");
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    DEEP500_CHECK(runner_, node_, ": needs a subgraph runner (run it inside a graph executor)");
    if (!v8_) {
      std::vector<Tensor> states(in.begin(), in.begin() + states_);
      std::vector<Tensor> xs(in.begin() + states_, in.end());
      auto res = scan(states, xs, in_axes_, -1);
      for (size_t i = 0; i < out.size() && i < res.size(); ++i) out[i] = res[i];
      return;
    }
    // Opset 8: run each batch row separately and stack the rows.
    DEEP500_CHECK(states_ + scan_inputs_ >= 1 && in[1].rank() >= 1, node_,
                  ": expected batched inputs");
    const int64_t batch = in[1].dim(0);
    const Tensor* lens = ops::optional_input(in, 0);
    std::vector<std::vector<Tensor>> rows(states_ + scan_outputs_);
    std::vector<int64_t> axes(scan_inputs_, 0);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> states, xs;
      for (int64_t i = 0; i < states_; ++i) states.push_back(take_slice(in[1 + i], 0, b));
      for (int64_t i = 0; i < scan_inputs_; ++i)
        xs.push_back(take_slice(in[1 + states_ + i], 0, b));
      int64_t len = lens ? static_cast<int64_t>(lens->at_as_double(b)) : -1;
      auto res = scan(states, xs, axes, len);
      for (size_t k = 0; k < res.size(); ++k) rows[k].push_back(res[k]);
    }
    for (size_t k = 0; k < out.size() && k < rows.size(); ++k) {
      // Rows of a scan output may differ in length with sequence_lens: pad with zeros.
      if (static_cast<int64_t>(k) >= states_ && lens) pad_rows(rows[k]);
      out[k] = stack(rows[k], 0, DataType::Float, node_);
    }
  }

 private:
  static void pad_rows(std::vector<Tensor>& rows) {
    int64_t longest = 0;
    for (auto& r : rows) longest = std::max(longest, r.rank() ? r.dim(0) : 0);
    for (auto& r : rows) {
      if (r.rank() == 0 || r.dim(0) == longest) continue;
      Shape s = r.shape();
      s[0] = longest;
      Tensor p(r.dtype(), s);
      copy_elements(r.dtype(), r, 0, p, 0, r.numel());
      r = p;
    }
  }

  // One scan; len < 0 means the full length of the scan axis.
  std::vector<Tensor> scan(std::vector<Tensor> states, const std::vector<Tensor>& xs,
                           const std::vector<int64_t>& axes, int64_t len) {
    int64_t seq = -1;
    std::vector<int64_t> ax(scan_inputs_);
    for (int64_t i = 0; i < scan_inputs_; ++i) {
      ax[i] = normalize_axis(axes[i], xs[i].rank(), node_ + " scan_input_axes");
      DEEP500_CHECK(seq < 0 || xs[i].dim(ax[i]) == seq, node_,
                    ": scan inputs have different sequence lengths");
      seq = xs[i].dim(ax[i]);
    }
    if (len >= 0) seq = std::min(seq, len);
    std::vector<std::vector<Tensor>> ys(scan_outputs_);
    for (int64_t t = 0; t < seq; ++t) {
      std::vector<Tensor> args = states;
      for (int64_t i = 0; i < scan_inputs_; ++i)
        args.push_back(take_slice(xs[i], ax[i], in_dirs_[i] ? seq - 1 - t : t));
      auto res = runner_->run(*body_, args);
      for (int64_t k = 0; k < states_; ++k) states[k] = res[k];
      for (int64_t k = 0; k < scan_outputs_; ++k) ys[k].push_back(res[states_ + k]);
    }
    std::vector<Tensor> result = states;
    for (int64_t k = 0; k < scan_outputs_; ++k) {
      if (out_dirs_[k]) std::reverse(ys[k].begin(), ys[k].end());
      result.push_back(stack(ys[k], v8_ ? 0 : out_axes_[k],
                             declared_dtype(body_->output(static_cast<int>(states_ + k))), node_));
    }
    return result;
  }

  std::string node_;
  ops::SubgraphRunner* runner_;
  std::shared_ptr<const onnx::GraphProto> body_;
  bool v8_ = false;
  int64_t scan_inputs_ = 0, states_ = 0, scan_outputs_ = 0;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
};

}  // namespace

void register_control_flow(Registry& r) {
  add_kernel<IfOp>(r, "If");
  add_kernel<LoopOp>(r, "Loop");
  add_kernel<ScanOp>(r, "Scan");
}

}  // namespace deep500::reference
