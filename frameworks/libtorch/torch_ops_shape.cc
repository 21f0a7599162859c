// Layout, indexing and constant ops as ATen calls (views where ATen has them).
#include <algorithm>

#include "frameworks/libtorch/torch_ops.h"

namespace deep500::libtorch {

namespace {

using Outs = std::vector<at::Tensor>;
using Ints = std::vector<int64_t>;

at::Tensor int64_tensor(const Ints& v) {
  return at::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())},
                       at::TensorOptions().dtype(at::kLong))
      .clone();
}

// Axes from the attribute before `input_since`, else from input 1 (may be absent).
Ints axes_of(const OpCall& c, int input_since, bool* given) {
  if (c.opset() < input_since) {
    *given = c.attr().has("axes");
    return c.attr().get_ints("axes", {});
  }
  *given = c.has(1);
  return *given ? c.ints(1) : Ints{};
}

Outs identity(const OpCall& c) {
  return {c.input(0)};
}

Outs flatten(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  int64_t axis = c.attr().get_int("axis", 1);
  if (axis < -x.dim() || axis > x.dim()) c.fail("axis ", axis, " out of range for rank ", x.dim());
  if (axis < 0) axis += x.dim();
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.size(i);
  int64_t inner = 1;
  for (int64_t i = axis; i < x.dim(); ++i) inner *= x.size(i);
  return {x.reshape({outer, inner})};
}

Outs reshape(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  Ints shape = c.opset() < 5 ? c.attr().get_ints("shape") : c.ints(1);
  const bool allow_zero = c.attr().get_int("allowzero", 0) != 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != 0 || allow_zero) continue;
    if (static_cast<int64_t>(i) >= x.dim()) c.fail("shape[", i, "] = 0 copies a missing dim");
    shape[i] = x.size(static_cast<int64_t>(i));
  }
  return {x.reshape(shape)};
}

Outs transpose(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  Ints perm;
  for (int64_t i = x.dim() - 1; i >= 0; --i) perm.push_back(i);
  perm = c.attr().get_ints("perm", perm);
  if (static_cast<int64_t>(perm.size()) != x.dim())
    c.fail("perm has ", perm.size(), " entries for rank ", x.dim());
  return {x.permute(perm)};
}

Outs concat(const OpCall& c) {
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < c.in.size(); ++i) parts.push_back(c.input(i));
  if (parts.empty()) c.fail("needs at least one input");
  const int64_t axis = norm_axis(c, c.attr().get_int("axis", 1), parts[0].dim());
  return {at::cat(parts, axis)};
}

Outs split(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  const int64_t axis = norm_axis(c, c.attr().get_int("axis", 0), x.dim());
  Ints sizes = c.opset() < 13 ? c.attr().get_ints("split", {}) : (c.has(1) ? c.ints(1) : Ints{});
  if (c.opset() < 2 && c.has(1)) sizes = c.ints(1);
  if (sizes.empty()) {
    const int64_t n = static_cast<int64_t>(c.node.outputs.size());
    if (x.size(axis) % n != 0) c.fail("dim ", x.size(axis), " does not split into ", n, " parts");
    sizes.assign(static_cast<size_t>(n), x.size(axis) / n);
  }
  return x.split_with_sizes(sizes, axis);
}

Outs squeeze(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  bool given = false;
  Ints axes = axes_of(c, 13, &given);
  std::vector<bool> drop(static_cast<size_t>(x.dim()), false);
  for (int64_t a : axes) {
    a = norm_axis(c, a, x.dim());
    if (x.size(a) != 1) c.fail("cannot squeeze axis ", a, " of size ", x.size(a));
    drop[static_cast<size_t>(a)] = true;
  }
  Ints shape;
  for (int64_t i = 0; i < x.dim(); ++i)
    if (!(given ? drop[static_cast<size_t>(i)] : x.size(i) == 1)) shape.push_back(x.size(i));
  return {x.reshape(shape)};
}

Outs unsqueeze(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  bool given = false;
  Ints axes = axes_of(c, 13, &given);
  const int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
  std::vector<bool> added(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    a = norm_axis(c, a, rank);
    if (added[static_cast<size_t>(a)]) c.fail("axis ", a, " repeated");
    added[static_cast<size_t>(a)] = true;
  }
  Ints shape;
  for (int64_t i = 0, j = 0; i < rank; ++i)
    shape.push_back(added[static_cast<size_t>(i)] ? 1 : x.size(j++));
  return {x.reshape(shape)};
}

Outs gather(const OpCall& c) {
  const at::Tensor &x = c.input(0), &indices = c.input(1);
  const int64_t axis = norm_axis(c, c.attr().get_int("axis", 0), x.dim());
  at::Tensor idx = indices.to(at::kLong);
  idx = at::where(idx.lt(0), idx.add(x.size(axis)), idx);  // negative indices count from the end
  Ints shape(x.sizes().begin(), x.sizes().begin() + axis);
  for (int64_t d : indices.sizes()) shape.push_back(d);
  for (int64_t i = axis + 1; i < x.dim(); ++i) shape.push_back(x.size(i));
  return {x.index_select(axis, idx.reshape({-1})).reshape(shape)};
}

// Expand: bidirectional broadcast of x with the shape input.
Outs expand(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  const Ints target = c.ints(1);
  const size_t rank = std::max<size_t>(target.size(), static_cast<size_t>(x.dim()));
  Ints out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i + x.dim() >= rank ? x.size(static_cast<int64_t>(i + x.dim() - rank)) : 1;
    const int64_t b = i + target.size() >= rank ? target[i + target.size() - rank] : 1;
    if (a != b && a != 1 && b != 1)
      c.fail("shape ", to_string(target), " does not broadcast with input ", to_string(dims(x)));
    out[i] = a == 1 ? b : a;
  }
  return {x.broadcast_to(out).contiguous()};
}

Outs tile(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  const Ints repeats = c.ints(1);
  if (static_cast<int64_t>(repeats.size()) != x.dim())
    c.fail("repeats has ", repeats.size(), " values, input rank is ", x.dim());
  return {x.repeat(repeats)};
}

Outs trilu(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  if (x.dim() < 2) c.fail("input must have rank >= 2, got ", x.dim());
  const int64_t k = c.has(1) ? c.ints(1).at(0) : 0;
  return {c.attr().get_int("upper", 1) != 0 ? x.triu(k) : x.tril(k)};
}

Outs gather_elements(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  const int64_t axis = norm_axis(c, c.attr().get_int("axis", 0), x.dim());
  at::Tensor idx = c.input(1).to(at::kLong);
  idx = at::where(idx.lt(0), idx.add(x.size(axis)), idx);
  return {x.gather(axis, idx)};
}

// DepthToSpace (DCR or CRD) and SpaceToDepth as a reshape, a permutation and a reshape.
Outs depth_to_space(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  if (x.dim() != 4) c.fail("input must be [N, C, H, W], got rank ", x.dim());
  const int64_t b = c.attr().get_int("blocksize"), n = x.size(0), ch = x.size(1);
  const int64_t h = x.size(2), w = x.size(3);
  if (b <= 0 || ch % (b * b) != 0)
    c.fail("blocksize ", b, " squared must divide ", ch, " channels");
  const int64_t oc = ch / (b * b);
  const bool crd = c.attr().get_string("mode", "DCR") == "CRD";
  at::Tensor t = crd ? x.reshape({n, oc, b, b, h, w}).permute({0, 1, 4, 2, 5, 3})
                     : x.reshape({n, b, b, oc, h, w}).permute({0, 3, 4, 1, 5, 2});
  return {t.reshape({n, oc, h * b, w * b})};
}
Outs space_to_depth(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  if (x.dim() != 4) c.fail("input must be [N, C, H, W], got rank ", x.dim());
  const int64_t b = c.attr().get_int("blocksize"), n = x.size(0), ch = x.size(1);
  const int64_t h = x.size(2), w = x.size(3);
  if (b <= 0 || h % b != 0 || w % b != 0)
    c.fail("blocksize ", b, " must divide H ", h, " and W ", w);
  at::Tensor t = x.reshape({n, ch, h / b, b, w / b, b}).permute({0, 3, 5, 1, 2, 4});
  return {t.reshape({n, ch * b * b, h / b, w / b})};
}

Outs shape(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  const int64_t r = x.dim();
  int64_t start = c.attr().get_int("start", 0), end = c.attr().get_int("end", r);
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  Ints d;
  for (int64_t i = start; i < end; ++i) d.push_back(x.size(i));
  return {int64_tensor(d)};
}

Outs constant(const OpCall& c) {
  const auto& a = c.attr();
  const std::string what = c.node.describe() + ": value";
  if (a.has("value")) return {to_aten(a.get_tensor("value"), what)};
  if (a.has("value_float")) return {to_aten(Tensor::scalar(a.get_float("value_float")), what)};
  if (a.has("value_int")) return {to_aten(Tensor::scalar(a.get_int("value_int")), what)};
  if (a.has("value_ints")) return {int64_tensor(a.get_ints("value_ints"))};
  auto f = a.get_floats("value_floats", {});
  return {to_aten(Tensor::from_vector<float>({static_cast<int64_t>(f.size())}, f), what)};
}

Outs cast(const OpCall& c) {
  const auto to = static_cast<DataType>(c.attr().get_int("to"));
  return {c.input(0).to(to_aten(to, c.node.describe()))};
}

// ONNX Pad: `pads` = [begin_0.., end_0..]; constant, reflect or edge mode.
Outs pad(const OpCall& c) {
  const at::Tensor& x = c.input(0);
  const int64_t r = x.dim();
  Ints pads = c.opset() < 11 ? c.attr().get_ints(c.opset() < 2 ? "paddings" : "pads") : c.ints(1);
  if (static_cast<int64_t>(pads.size()) != 2 * r)
    c.fail("pads has ", pads.size(), " values for rank ", r, " (expected ", 2 * r, ")");
  const std::string mode = c.attr().get_string("mode", "constant");
  Ints p;  // ATen order: last dim first
  for (int64_t i = r; i-- > 0;)
    p.insert(p.end(), {pads[static_cast<size_t>(i)], pads[static_cast<size_t>(i + r)]});
  if (mode == "constant") {
    double value = c.opset() < 11 ? c.attr().get_float("value", 0.0f)
                                  : (c.has(2) && c.in[2].numel() > 0 ? c.scalar(2) : 0.0);
    return {at::constant_pad_nd(x, p, value)};
  }
  // reflect / edge: ATen pads the last k <= 3 dims of a [batch, D1..Dk] tensor.
  int64_t first = r;
  for (int64_t i = 0; i < r; ++i)
    if (pads[static_cast<size_t>(i)] || pads[static_cast<size_t>(i + r)])
      first = std::min(first, i);
  if (first == r) return {x};
  const int64_t k = r - first;
  if (k > 3) c.fail("mode '", mode, "' pads ", k, " trailing dims; ATen supports at most 3");
  Ints lead(x.sizes().begin(), x.sizes().begin() + first), flat{-1};
  for (int64_t i = first; i < r; ++i) flat.push_back(x.size(i));
  // ATen's reflection / replication pads take floating types only.
  const bool integral = at::isIntegralType(x.scalar_type(), true);
  at::Tensor x2 = (integral ? x.to(at::kDouble) : x).reshape(flat), y;
  p.resize(static_cast<size_t>(2 * k));
  if (mode == "reflect") {
    y = k == 1   ? at::reflection_pad1d(x2, p)
        : k == 2 ? at::reflection_pad2d(x2, p)
                 : at::reflection_pad3d(x2, p);
  } else if (mode == "edge") {
    y = k == 1   ? at::replication_pad1d(x2, p)
        : k == 2 ? at::replication_pad2d(x2, p)
                 : at::replication_pad3d(x2, p);
  } else {
    c.fail("mode must be constant, reflect or edge, got '", mode, "'");
  }
  for (int64_t i = 1; i < y.dim(); ++i) lead.push_back(y.size(i));
  y = y.reshape(lead);
  return {integral ? y.to(x.scalar_type()) : y};
}

// ONNX Slice with clamping rules; negative steps slice the flipped axis.
Outs slice(const OpCall& c) {
  at::Tensor x = c.input(0);
  Ints starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attr().get_ints("starts");
    ends = c.attr().get_ints("ends");
    axes = c.attr().get_ints("axes", {});
  } else {
    starts = c.ints(1);
    ends = c.ints(2);
    if (c.has(3)) axes = c.ints(3);
    if (c.has(4)) steps = c.ints(4);
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps must have the same length");
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = norm_axis(c, axes[i], x.dim()), dim = x.size(axis), step = steps[i];
    if (step == 0) c.fail("steps must be non-zero");
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      x = x.slice(axis, s, std::max(s, e), step);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      // index j of the flipped axis is dim - 1 - j of the original
      const int64_t fs = dim - 1 - s, fe = dim - 1 - e;
      x = x.flip({axis}).slice(axis, fs, std::max(fs, fe), -step);
    }
  }
  return {x};
}

// ---- construction-time checks ----
void check_constant(const ops::NodeSpec& n) {
  const auto& a = n.attributes;
  DEEP500_CHECK(a.has("value") || a.has("value_float") || a.has("value_floats") ||
                    a.has("value_int") || a.has("value_ints"),
                "libtorch executor: ", n.describe(),
                ": only value / value_float(s) / value_int(s) constants have an ATen mapping");
  if (a.has("value")) to_aten(a.get_tensor("value").dtype(), n.describe() + ": value");
}
void check_cast(const ops::NodeSpec& n) {
  to_aten(static_cast<DataType>(n.attributes.get_int("to")),
          "libtorch executor: " + n.describe() + ": target type");
}

}  // namespace

void add_shape_ops(OpTable& t) {
  constexpr int kMax = 17;
  t.push_back({"Identity", 1, kMax, "alias", identity});
  t.push_back({"Flatten", 1, kMax, "reshape", flatten});
  t.push_back({"Reshape", 1, kMax, "reshape", reshape});
  t.push_back({"Transpose", 1, kMax, "permute", transpose});
  t.push_back({"Concat", 1, kMax, "cat", concat});
  t.push_back({"Split", 1, kMax, "split_with_sizes", split});
  t.push_back({"Squeeze", 1, kMax, "reshape", squeeze});
  t.push_back({"Unsqueeze", 1, kMax, "reshape", unsqueeze});
  t.push_back({"Gather", 1, kMax, "index_select", gather});
  t.push_back({"Shape", 1, kMax, "sizes", shape});
  t.push_back({"Constant", 1, kMax, "from_blob", constant, check_constant});
  t.push_back({"Cast", 1, kMax, "to", cast, check_cast});
  t.push_back({"Pad", 1, kMax, "constant_pad_nd", pad});
  t.push_back({"Slice", 1, kMax, "slice", slice});
  t.push_back({"Expand", 8, kMax, "broadcast_to", expand});
  t.push_back({"Tile", 6, kMax, "repeat", tile});
  t.push_back({"Trilu", 14, kMax, "triu", trilu});
  t.push_back({"GatherElements", 11, kMax, "gather", gather_elements});
  t.push_back({"DepthToSpace", 11, kMax, "permute", depth_to_space});
  t.push_back({"SpaceToDepth", 1, kMax, "permute", space_to_depth});
}

}  // namespace deep500::libtorch
