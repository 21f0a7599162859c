// If, Loop, Scan and SequenceMap on Values: used when a body carries
// sequences or optionals (the tensor-only kernels in
// frameworks/reference/kernels/control_flow.cc handle the rest).
#include <algorithm>
#include <climits>

#include "network/sequence_ops.h"

namespace deep500::network {

namespace {

using ops::NodeSpec;

bool truth(const Value& v, const std::string& what) {
  const Tensor& t = v.tensor(what);
  DEEP500_CHECK(t.numel() == 1, what, ": condition must have exactly one element, got shape ",
                to_string(t.shape()));
  return t.at_as_double(0) != 0;
}

DataType declared_dtype(const onnx::ValueInfoProto& vi) {
  const auto& t = vi.type();
  if (t.has_tensor_type() && t.tensor_type().elem_type() != 0)
    return static_cast<DataType>(t.tensor_type().elem_type());
  if (t.has_sequence_type() && t.sequence_type().elem_type().has_tensor_type() &&
      t.sequence_type().elem_type().tensor_type().elem_type() != 0)
    return static_cast<DataType>(t.sequence_type().elem_type().tensor_type().elem_type());
  return DataType::Float;
}

// Stacks per-iteration tensors along a new `axis`; empty: a [0] tensor.
Tensor stack(const std::vector<Tensor>& parts, int64_t axis, DataType empty_dtype,
             const std::string& what) {
  if (parts.empty()) return Tensor(empty_dtype, {0});
  for (const auto& p : parts)
    DEEP500_CHECK(p.shape() == parts[0].shape(), what,
                  ": scan output changes shape between iterations: ", to_string(parts[0].desc()),
                  " vs ", to_string(p.desc()));
  return concat_tensors(parts, axis, true, what);
}

void check_count(const NodeSpec& node, const std::vector<Value>& res, size_t want,
                 const char* what) {
  DEEP500_CHECK(res.size() >= want, node.describe(), ": ", what, " produced ", res.size(),
                " outputs, expected at least ", want);
}

}  // namespace

bool graph_has_non_tensor_io(const onnx::GraphProto& graph) {
  for (const auto& vi : graph.input())
    if (!vi.type().has_tensor_type()) return true;
  for (const auto& vi : graph.output())
    if (!vi.type().has_tensor_type()) return true;
  return false;
}

std::vector<Value> run_if(const NodeSpec& node, const std::vector<Value>& in,
                          ValueGraphRunner& runner) {
  DEEP500_CHECK(in.size() == 1, node.describe(), ": expected 1 input (cond), got ", in.size());
  bool cond = truth(in[0], node.describe() + " cond");
  auto branch = node.attributes.get_graph(cond ? "then_branch" : "else_branch");
  auto res = runner.run_graph(*branch, {});
  DEEP500_CHECK(res.size() == node.outputs.size(), node.describe(), ": branch produced ",
                res.size(), " outputs, node has ", node.outputs.size());
  return res;
}

std::vector<Value> run_loop(const NodeSpec& node, const std::vector<Value>& in,
                            ValueGraphRunner& runner) {
  auto body = node.attributes.get_graph("body");
  DEEP500_CHECK(in.size() >= 2, node.describe(), ": expected inputs (M, cond, v_initial...)");
  const size_t carried = in.size() - 2;
  DEEP500_CHECK(body->input_size() == static_cast<int>(carried + 2), node.describe(),
                ": body must take ", carried + 2, " inputs, declares ", body->input_size());
  DEEP500_CHECK(body->output_size() >= static_cast<int>(carried + 1), node.describe(),
                ": body must produce at least ", carried + 1, " outputs");
  const size_t scans = static_cast<size_t>(body->output_size()) - 1 - carried;
  auto absent = [](const Value& v) { return v.is_tensor() && !v.tensor("").defined(); };
  DEEP500_CHECK(!absent(in[0]) || !absent(in[1]), node.describe(),
                ": neither M nor cond given (the loop would never end)");
  int64_t max_trip = INT64_MAX;
  if (!absent(in[0]))
    max_trip = static_cast<int64_t>(in[0].tensor(node.describe() + " M").at_as_double(0));
  bool cond = absent(in[1]) ? true : truth(in[1], node.describe() + " cond");
  std::vector<Value> state(in.begin() + 2, in.end());
  std::vector<std::vector<Tensor>> scanned(scans);
  for (int64_t i = 0; i < max_trip && cond; ++i) {
    std::vector<Value> args = {Tensor::scalar<int64_t>(i), Tensor::scalar<bool>(cond)};
    args.insert(args.end(), state.begin(), state.end());
    auto res = runner.run_graph(*body, args);
    check_count(node, res, 1 + carried + scans, "body");
    cond = truth(res[0], node.describe() + " body condition");
    for (size_t k = 0; k < carried; ++k) state[k] = res[1 + k];
    for (size_t k = 0; k < scans; ++k)
      scanned[k].push_back(res[1 + carried + k].tensor(cat(node.describe(), " scan output ", k)));
  }
  std::vector<Value> out(state.begin(), state.end());
  for (size_t k = 0; k < scans; ++k)
    out.push_back(stack(scanned[k], 0,
                        declared_dtype(body->output(static_cast<int>(1 + carried + k))),
                        node.describe()));
  out.resize(std::min(out.size(), node.outputs.size()));
  return out;
}

std::vector<Value> run_scan(const NodeSpec& node, const std::vector<Value>& in,
                            ValueGraphRunner& runner) {
  const std::string me = node.describe();
  DEEP500_CHECK(node.opset >= 9, me, ": Scan-8 (batched) is not supported on sequence values");
  const auto& at = node.attributes;
  auto body = at.get_graph("body");
  const int64_t n_scan = at.get_int("num_scan_inputs");
  const int64_t n_state = static_cast<int64_t>(in.size()) - n_scan;
  const int64_t n_out = body->output_size() - n_state;
  DEEP500_CHECK(n_state >= 0 && n_scan >= 1 && n_out >= 0 && body->input_size() == n_state + n_scan,
                me, ": body signature does not match ", n_state, " states and ", n_scan,
                " scan inputs");
  auto in_axes = at.get_ints("scan_input_axes", std::vector<int64_t>(n_scan, 0));
  auto in_dirs = at.get_ints("scan_input_directions", std::vector<int64_t>(n_scan, 0));
  auto out_axes = at.get_ints("scan_output_axes", std::vector<int64_t>(n_out, 0));
  auto out_dirs = at.get_ints("scan_output_directions", std::vector<int64_t>(n_out, 0));
  DEEP500_CHECK(static_cast<int64_t>(in_axes.size()) == n_scan &&
                    static_cast<int64_t>(in_dirs.size()) == n_scan &&
                    static_cast<int64_t>(out_axes.size()) == n_out &&
                    static_cast<int64_t>(out_dirs.size()) == n_out,
                me, ": scan axis/direction attributes must have one entry per scan value");
  std::vector<Value> state(in.begin(), in.begin() + n_state);
  std::vector<Tensor> xs;
  int64_t len = -1;
  for (int64_t i = 0; i < n_scan; ++i) {
    xs.push_back(in[n_state + i].tensor(cat(me, " scan input ", i)));
    in_axes[i] = normalize_axis(in_axes[i], xs.back().rank(), me + " scan_input_axes");
    DEEP500_CHECK(len < 0 || xs.back().dim(in_axes[i]) == len, me,
                  ": scan inputs have different sequence lengths");
    len = xs.back().dim(in_axes[i]);
  }
  std::vector<std::vector<Tensor>> ys(static_cast<size_t>(n_out));
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Value> args = state;
    for (int64_t i = 0; i < n_scan; ++i)
      args.push_back(take_slice(xs[i], in_axes[i], in_dirs[i] ? len - 1 - t : t));
    auto res = runner.run_graph(*body, args);
    check_count(node, res, static_cast<size_t>(n_state + n_out), "body");
    for (int64_t k = 0; k < n_state; ++k) state[k] = res[k];
    for (int64_t k = 0; k < n_out; ++k)
      ys[k].push_back(res[n_state + k].tensor(cat(me, " scan output ", k)));
  }
  std::vector<Value> out = state;
  for (int64_t k = 0; k < n_out; ++k) {
    if (out_dirs[k]) std::reverse(ys[k].begin(), ys[k].end());
    out.push_back(
        stack(ys[k], out_axes[k], declared_dtype(body->output(static_cast<int>(n_state + k))), me));
  }
  out.resize(std::min(out.size(), node.outputs.size()));
  return out;
}

std::vector<Value> run_sequence_map(const NodeSpec& node, const std::vector<Value>& in,
                                    ValueGraphRunner& runner) {
  const std::string me = node.describe();
  auto body = node.attributes.get_graph("body");
  DEEP500_CHECK(!in.empty(), me, ": expected at least the input sequence");
  DEEP500_CHECK(body->input_size() == static_cast<int>(in.size()), me, ": body takes ",
                body->input_size(), " inputs, node has ", in.size());
  DEEP500_CHECK(body->output_size() == static_cast<int>(node.outputs.size()), me,
                ": body produces ", body->output_size(), " outputs, node has ",
                node.outputs.size());
  const size_t len = in[0].sequence(me + " input 0").size();
  for (size_t i = 1; i < in.size(); ++i)
    DEEP500_CHECK(!in[i].is_sequence() || in[i].sequence("").size() == len, me, ": input ", i,
                  " has ", in[i].sequence("").size(), " elements, input 0 has ", len);
  std::vector<std::vector<Tensor>> outs(node.outputs.size());
  for (size_t k = 0; k < len; ++k) {
    std::vector<Value> args;
    for (size_t i = 0; i < in.size(); ++i)
      args.push_back(in[i].is_sequence() ? Value(in[i].sequence("")[k]) : in[i]);
    auto res = runner.run_graph(*body, args);
    for (size_t j = 0; j < outs.size(); ++j)
      outs[j].push_back(res[j].tensor(cat(me, " body output ", j)));
  }
  std::vector<Value> result;
  for (size_t j = 0; j < outs.size(); ++j) {
    DataType dt =
        outs[j].empty() ? declared_dtype(body->output(static_cast<int>(j))) : outs[j][0].dtype();
    result.push_back(Value::sequence(std::move(outs[j]), dt));
  }
  return result;
}

}  // namespace deep500::network
