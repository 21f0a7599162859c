// If, Loop, Scan (every opset, Scan-8's batch axis included) and SequenceMap
// on Values: the one implementation of control flow, for tensor bodies and
// bodies carrying sequences or optionals alike.
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

namespace {

// Whether the body passes its condition input on unchanged (directly or
// through Identity nodes): then only the trip count ends the loop.
bool condition_passes_through(const onnx::GraphProto& body) {
  std::string name = body.output(0).name();
  for (int hops = 0; hops <= body.node_size(); ++hops) {
    if (name == body.input(1).name()) return true;
    const onnx::NodeProto* from = nullptr;
    for (const auto& n : body.node())
      for (const auto& o : n.output())
        if (o == name) from = &n;
    if (!from || from->op_type() != "Identity" || from->input_size() != 1) return false;
    name = from->input(0);
  }
  return false;
}

}  // namespace

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
  const int64_t limit = runner.max_loop_iterations();
  // A trip count past the limit that nothing else can end is refused before
  // the first iteration (reaching the limit could take minutes).
  DEEP500_CHECK(max_trip <= limit || !cond || !condition_passes_through(*body), node.describe(),
                ": ",
                max_trip == INT64_MAX ? std::string("no trip count") : cat("trip count ", max_trip),
                " exceeds the ", limit,
                " iterations allowed, and the body's condition cannot end the loop sooner; raise "
                "the setting executor.max_loop_iterations if that is intended");
  for (int64_t i = 0; i < max_trip && cond; ++i) {
    DEEP500_CHECK(i < limit, node.describe(), ": the loop is still running after ", limit,
                  " iterations (trip count ",
                  max_trip == INT64_MAX ? std::string("none") : std::to_string(max_trip),
                  "); raise the setting executor.max_loop_iterations if that is intended");
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

namespace {

// Scan's body and per-value attributes; Scan-8 has a batch axis 0 and an
// optional sequence_lens input first, and calls the input directions
// "directions".
struct ScanSpec {
  std::shared_ptr<const onnx::GraphProto> body;
  bool batched = false;
  int64_t n_state = 0, n_scan = 0, n_out = 0;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

ScanSpec scan_spec(const NodeSpec& node, size_t inputs) {
  const std::string me = node.describe();
  const auto& at = node.attributes;
  ScanSpec s;
  s.body = at.get_graph("body");
  s.batched = node.opset < 9;
  s.n_scan = at.get_int("num_scan_inputs");
  s.n_state = static_cast<int64_t>(inputs) - (s.batched ? 1 : 0) - s.n_scan;
  s.n_out = s.body->output_size() - s.n_state;
  DEEP500_CHECK(s.n_state >= 0 && s.n_scan >= 1 && s.n_out >= 0 &&
                    s.body->input_size() == s.n_state + s.n_scan,
                me, ": body signature does not match ", s.n_state, " states and ", s.n_scan,
                " scan inputs");
  s.in_axes = s.batched ? std::vector<int64_t>(s.n_scan, 0)
                        : at.get_ints("scan_input_axes", std::vector<int64_t>(s.n_scan, 0));
  s.in_dirs = at.get_ints(s.batched ? "directions" : "scan_input_directions",
                          std::vector<int64_t>(s.n_scan, 0));
  s.out_axes = s.batched ? std::vector<int64_t>(s.n_out, 0)
                         : at.get_ints("scan_output_axes", std::vector<int64_t>(s.n_out, 0));
  s.out_dirs = at.get_ints("scan_output_directions", std::vector<int64_t>(s.n_out, 0));
  DEEP500_CHECK(static_cast<int64_t>(s.in_axes.size()) == s.n_scan &&
                    static_cast<int64_t>(s.in_dirs.size()) == s.n_scan &&
                    static_cast<int64_t>(s.out_axes.size()) == s.n_out &&
                    static_cast<int64_t>(s.out_dirs.size()) == s.n_out,
                me, ": scan axis/direction attributes must have one entry per scan value");
  return s;
}

// One scan over `xs` (at most `len` steps; len < 0: the whole scan axis):
// the final states, then the stacked scan outputs.
std::vector<Value> scan_once(const NodeSpec& node, const ScanSpec& s, std::vector<Value> state,
                             const std::vector<Tensor>& xs, int64_t len, ValueGraphRunner& runner) {
  const std::string me = node.describe();
  std::vector<int64_t> axes(static_cast<size_t>(s.n_scan));
  int64_t seq = -1;
  for (int64_t i = 0; i < s.n_scan; ++i) {
    DEEP500_CHECK(xs[i].rank() >= 1, me, ": scan input ", i,
                  " is a scalar; a scan input needs an axis to scan along");
    axes[i] = normalize_axis(s.in_axes[i], xs[i].rank(), me + " scan_input_axes");
    DEEP500_CHECK(seq < 0 || xs[i].dim(axes[i]) == seq, me,
                  ": scan inputs have different sequence lengths");
    seq = xs[i].dim(axes[i]);
  }
  if (len >= 0) seq = std::min(seq, len);
  std::vector<std::vector<Tensor>> ys(static_cast<size_t>(s.n_out));
  for (int64_t t = 0; t < seq; ++t) {
    std::vector<Value> args = state;
    for (int64_t i = 0; i < s.n_scan; ++i)
      args.push_back(take_slice(xs[i], axes[i], s.in_dirs[i] ? seq - 1 - t : t));
    auto res = runner.run_graph(*s.body, args);
    check_count(node, res, static_cast<size_t>(s.n_state + s.n_out), "body");
    for (int64_t k = 0; k < s.n_state; ++k) state[k] = res[k];
    for (int64_t k = 0; k < s.n_out; ++k)
      ys[k].push_back(res[s.n_state + k].tensor(cat(me, " scan output ", k)));
  }
  std::vector<Value> out = state;
  for (int64_t k = 0; k < s.n_out; ++k) {
    if (s.out_dirs[k]) std::reverse(ys[k].begin(), ys[k].end());
    out.push_back(stack(ys[k], s.out_axes[k],
                        declared_dtype(s.body->output(static_cast<int>(s.n_state + k))), me));
  }
  return out;
}

// Rows of a Scan-8 output may differ in length with sequence_lens: zero-pad
// them along their first axis to the longest.
void pad_rows(std::vector<Tensor>& rows) {
  int64_t longest = 0;
  for (auto& r : rows) longest = std::max(longest, r.rank() ? r.dim(0) : 0);
  for (auto& r : rows) {
    if (r.rank() == 0 || r.dim(0) == longest) continue;
    Shape zeros = r.shape();
    zeros[0] = longest - r.dim(0);
    r = concat_tensors({r, Tensor(r.dtype(), zeros)}, 0, false, "Scan-8 padding");
  }
}

// Scan-8: each batch row (axis 0 of every state and scan input) scans on its
// own, up to its sequence length; the rows are stacked again.
std::vector<Value> scan_batched(const NodeSpec& node, const ScanSpec& s,
                                const std::vector<Value>& in, ValueGraphRunner& runner) {
  const std::string me = node.describe();
  std::vector<Tensor> t;
  for (size_t i = 1; i < in.size(); ++i) t.push_back(in[i].tensor(cat(me, " input ", i)));
  DEEP500_CHECK(!t.empty() && t[0].rank() >= 1, me, ": expected batched inputs");
  const int64_t batch = t[0].dim(0);
  const Tensor lens = in[0].tensor(me + " sequence_lens");
  std::vector<std::vector<Tensor>> rows(static_cast<size_t>(s.n_state + s.n_out));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Value> states;
    std::vector<Tensor> xs;
    for (int64_t i = 0; i < s.n_state; ++i) states.push_back(take_slice(t[i], 0, b));
    for (int64_t i = 0; i < s.n_scan; ++i) xs.push_back(take_slice(t[s.n_state + i], 0, b));
    const int64_t len = lens.defined() ? static_cast<int64_t>(lens.at_as_double(b)) : -1;
    auto res = scan_once(node, s, states, xs, len, runner);
    for (size_t k = 0; k < res.size(); ++k) rows[k].push_back(res[k].tensor(me));
  }
  std::vector<Value> out;
  for (size_t k = 0; k < rows.size(); ++k) {
    if (static_cast<int64_t>(k) >= s.n_state && lens.defined()) pad_rows(rows[k]);
    out.push_back(stack(rows[k], 0, DataType::Float, me));
  }
  return out;
}

}  // namespace

std::vector<Value> run_scan(const NodeSpec& node, const std::vector<Value>& in,
                            ValueGraphRunner& runner) {
  const ScanSpec s = scan_spec(node, in.size());
  std::vector<Value> out;
  if (s.batched) {
    out = scan_batched(node, s, in, runner);
  } else {
    std::vector<Value> state(in.begin(), in.begin() + s.n_state);
    std::vector<Tensor> xs;
    for (int64_t i = 0; i < s.n_scan; ++i)
      xs.push_back(in[s.n_state + i].tensor(cat(node.describe(), " scan input ", i)));
    out = scan_once(node, s, std::move(state), xs, -1, runner);
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
