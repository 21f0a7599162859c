#include "operators/node_checks.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "deep/error.h"
#include "deep/text.h"

namespace deep500::ops {
namespace {

// Int attributes that are booleans wherever ONNX uses the name.
const std::set<std::string>& flag_attributes() {
  static const std::set<std::string> names = {"allowzero",        "ceil_mode",
                                              "center_point_box", "count_include_pad",
                                              "detect_negative",  "detect_positive",
                                              "exclusive",        "fmod",
                                              "input_forget",     "keepdims",
                                              "largest",          "layout",
                                              "new_axis",         "noop_with_empty_axes",
                                              "reverse",          "select_last_index",
                                              "sorted",           "storage_order",
                                              "training_mode",    "transA",
                                              "transB",           "upper"};
  return names;
}

// Int (list) attributes that are sizes (>= 1) or paddings (>= 0).
const std::set<std::string>& size_attributes() {
  static const std::set<std::string> names = {"kernel_shape", "strides", "dilations", "group",
                                              "blocksize"};
  return names;
}
const std::set<std::string>& padding_attributes() {
  static const std::set<std::string> names = {"pads", "output_padding"};
  return names;
}

void check_int_values(const NodeSpec& node, const std::string& name,
                      const std::vector<int64_t>& values) {
  for (int64_t v : values) {
    if (flag_attributes().count(name))
      DEEP500_CHECK(v == 0 || v == 1, node.describe(), ": attribute '", name, "' is ", v,
                    ", expected 0 or 1");
    if (size_attributes().count(name) || (node.op_type == "LRN" && name == "size"))
      DEEP500_CHECK(v >= 1, node.describe(), ": attribute '", name, "' has value ", v,
                    ", expected sizes >= 1");
    if (padding_attributes().count(name) && node.op_type != "Pad")  // Pad-2's crop
      DEEP500_CHECK(v >= 0, node.describe(), ": attribute '", name, "' has value ", v,
                    ", expected paddings >= 0");
  }
}

void check_float_values(const NodeSpec& node, const std::string& name,
                        const std::vector<float>& values) {
  if (node.op_type == "Constant") return;  // a NaN constant is data
  for (float v : values) {
    DEEP500_CHECK(!std::isnan(v), node.describe(), ": attribute '", name,
                  "' is NaN, expected a number");
    if (name == "epsilon")
      DEEP500_CHECK(std::isfinite(v) && v >= 0, node.describe(), ": attribute 'epsilon' is ", v,
                    ", expected a finite value >= 0");
  }
}

void check_attributes(const NodeSpec& node) {
  for (const auto& [name, a] : node.attributes.all()) {
    switch (a.kind) {
      case Attribute::Kind::Int: check_int_values(node, name, {a.i}); break;
      case Attribute::Kind::Ints: check_int_values(node, name, a.ints); break;
      case Attribute::Kind::Float: check_float_values(node, name, {a.f}); break;
      case Attribute::Kind::Floats: check_float_values(node, name, a.floats); break;
      default: break;
    }
  }
}

// Input i's shape when its descriptor is fully known.
const Shape* known(const OpContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return nullptr;
  const Shape& s = ctx.inputs[i].shape;
  bool all_known = std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; });
  return all_known ? &s : nullptr;
}

std::string input_name(const NodeSpec& node, size_t i, const char* role) {
  std::string name = i < node.inputs.size() ? node.inputs[i] : std::string();
  return cat(role, name.empty() ? "" : cat(" '", name, "'"));
}

void check_exact(const OpContext& ctx, size_t i, const char* role, const Shape& expected,
                 const std::string& because) {
  const Shape* s = known(ctx, i);
  if (!s) return;
  DEEP500_CHECK(*s == expected, ctx.node.describe(), ": ", input_name(ctx.node, i, role),
                " has shape ", to_string(*s), ", expected ", to_string(expected), " (", because,
                ")");
}

// `s` broadcasts to `target` without changing it (ONNX's unidirectional rule).
bool broadcasts_to(const Shape& s, const Shape& target) {
  if (s.size() > target.size()) return false;
  for (size_t k = 0; k < s.size(); ++k) {
    int64_t d = s[s.size() - 1 - k], t = target[target.size() - 1 - k];
    if (d != 1 && d != t) return false;
  }
  return true;
}

void check_broadcasts(const OpContext& ctx, size_t i, const char* role, const Shape& target,
                      const std::string& what) {
  const Shape* s = known(ctx, i);
  if (!s) return;
  DEEP500_CHECK(broadcasts_to(*s, target), ctx.node.describe(), ": ", input_name(ctx.node, i, role),
                " has shape ", to_string(*s), ", which does not broadcast to ", what, " ",
                to_string(target));
}

void check_conv_bias(const OpContext& ctx, bool transposed) {
  const Shape* w = known(ctx, 1);
  if (!w || w->size() < 2) return;
  int64_t group = ctx.node.attributes.get_int("group", 1);
  int64_t m = transposed ? (*w)[1] * group : (*w)[0];
  check_exact(ctx, 2, "bias", {m}, cat("one per output channel of W ", to_string(*w)));
}

void check_gemm_bias(const OpContext& ctx) {
  const Shape* a = known(ctx, 0);
  const Shape* b = known(ctx, 1);
  if (!a || !b || a->size() != 2 || b->size() != 2) return;
  bool ta = ctx.node.attributes.get_int("transA", 0) != 0;
  bool tb = ctx.node.attributes.get_int("transB", 0) != 0;
  Shape y = {ta ? (*a)[1] : (*a)[0], tb ? (*b)[0] : (*b)[1]};
  check_broadcasts(ctx, 2, "C", y, "the output [M, N] =");
}

void check_per_channel(const OpContext& ctx, std::initializer_list<size_t> inputs,
                       std::initializer_list<const char*> roles) {
  const Shape* x = known(ctx, 0);
  if (!x || x->size() < 2) return;
  auto role = roles.begin();
  for (size_t i : inputs) check_exact(ctx, i, *role++, {(*x)[1]}, cat("C of X ", to_string(*x)));
}

void check_layer_norm(const OpContext& ctx) {
  const Shape* x = known(ctx, 0);
  if (!x || x->empty()) return;
  int64_t rank = static_cast<int64_t>(x->size());
  int64_t axis = ctx.node.attributes.get_int("axis", -1);
  DEEP500_CHECK(axis >= -rank && axis < rank, ctx.node.describe(), ": attribute 'axis' is ", axis,
                ", expected a value in [", -rank, ", ", rank - 1, "] for X ", to_string(*x));
  Shape normalized(x->begin() + (axis < 0 ? axis + rank : axis), x->end());
  check_broadcasts(ctx, 1, "Scale", normalized, "X's normalized dims");
  check_broadcasts(ctx, 2, "B", normalized, "X's normalized dims");
}

// Input ranks the ONNX spec requires, for ops whose ONNX shape inference
// (run for costs and plans before any kernel) or kernel indexes dims
// without checking the rank. Found by fuzzing (tests/fuzz): STFT on a 1-D
// signal and MaxUnpool with scalar indices crashed inside libonnx; Split
// and Slice of a scalar indexed past their dims, and so did Compress;
// LayerNormalization of a scalar crashed inside libonnx.
struct RankRule {
  const char* op;
  size_t input;
  const char* role;
  size_t min_rank, max_rank;
};
constexpr size_t kAnyRank = 1u << 20;
constexpr RankRule kRankRules[] = {{"STFT", 0, "signal", 3, 3},
                                   {"STFT", 1, "frame_step", 0, 0},
                                   {"STFT", 2, "window", 1, 1},
                                   {"STFT", 3, "frame_length", 0, 0},
                                   {"Split", 0, "input", 1, kAnyRank},
                                   {"Concat", 0, "input", 1, kAnyRank},
                                   {"Gather", 0, "data", 1, kAnyRank},
                                   {"GatherElements", 0, "data", 1, kAnyRank},
                                   {"CumSum", 0, "x", 1, kAnyRank},
                                   {"Slice", 0, "data", 1, kAnyRank},
                                   {"Trilu", 0, "input", 2, kAnyRank},
                                   {"ScatterElements", 0, "data", 1, kAnyRank},
                                   {"ReverseSequence", 0, "input", 2, kAnyRank},
                                   {"Compress", 0, "input", 1, kAnyRank},
                                   {"LayerNormalization", 0, "X", 1, kAnyRank},
                                   {"MaxUnpool", 0, "X", 3, kAnyRank},
                                   {"MaxUnpool", 1, "I", 3, kAnyRank}};

void check_ranks(const OpContext& ctx) {
  for (const auto& rule : kRankRules) {
    if (ctx.node.op_type != rule.op || !ctx.has_input(rule.input)) continue;
    const Shape& s = ctx.inputs[rule.input].shape;
    const std::string expected = rule.min_rank == rule.max_rank ? cat("rank ", rule.min_rank)
                                 : rule.max_rank == kAnyRank
                                     ? cat("rank >= ", rule.min_rank)
                                     : cat("rank ", rule.min_rank, "..", rule.max_rank);
    DEEP500_CHECK(s.size() >= rule.min_rank && s.size() <= rule.max_rank, ctx.node.describe(), ": ",
                  input_name(ctx.node, rule.input, rule.role), " has rank ", s.size(), " (shape ",
                  to_string(s), "), expected ", expected);
  }
}

// Window attributes (Conv, pooling, MaxUnpool, ...) have one entry per
// spatial dim of X (pads two): ONNX's shape inference reads them per dim.
void check_window_attributes(const OpContext& ctx) {
  const Shape* x = known(ctx, 0);
  if (!x || !ctx.node.attributes.has("kernel_shape") || ctx.node.op_type == "MaxRoiPool") return;
  const int64_t spatial = static_cast<int64_t>(x->size()) - 2;
  DEEP500_CHECK(spatial >= 1, ctx.node.describe(), ": ", input_name(ctx.node, 0, "X"),
                " has shape ", to_string(*x), ", expected [N, C, spatial dims...]");
  for (const char* name : {"kernel_shape", "strides", "dilations", "pads"}) {
    if (!ctx.node.attributes.has(name)) continue;
    const auto values = ctx.node.attributes.get_ints(name);
    const int64_t expected = std::string(name) == "pads" ? 2 * spatial : spatial;
    DEEP500_CHECK(static_cast<int64_t>(values.size()) == expected, ctx.node.describe(),
                  ": attribute '", name, "' has ", values.size(), " values, expected ", expected,
                  " for X ", to_string(*x));
  }
}

// A convolution's W has X's rank, [N, C, spatial dims...]: ONNX's shape
// inference reads one kernel dim per spatial dim of X.
void check_conv_weight_rank(const OpContext& ctx, size_t w_index) {
  const Shape* x = known(ctx, 0);
  const Shape* w = known(ctx, w_index);
  if (!x || !w) return;
  DEEP500_CHECK(x->size() >= 3, ctx.node.describe(), ": ", input_name(ctx.node, 0, "X"),
                " has shape ", to_string(*x), ", expected [N, C, spatial dims...]");
  DEEP500_CHECK(w->size() == x->size(), ctx.node.describe(), ": ",
                input_name(ctx.node, w_index, "W"), " has shape ", to_string(*w),
                ", expected rank ", x->size(), " as X ", to_string(*x));
}

void check_parameter_shapes(const OpContext& ctx) {
  const std::string& op = ctx.node.op_type;
  if (op == "Conv" || op == "ConvInteger" || op == "ConvTranspose") check_conv_weight_rank(ctx, 1);
  if (op == "QLinearConv") check_conv_weight_rank(ctx, 3);
  if (op == "Conv") {
    check_conv_bias(ctx, false);
  } else if (op == "ConvTranspose") {
    check_conv_bias(ctx, true);
  } else if (op == "Gemm") {
    check_gemm_bias(ctx);
  } else if (op == "BatchNormalization") {
    check_per_channel(ctx, {1, 2, 3, 4}, {"scale", "B", "mean", "var"});
  } else if (op == "InstanceNormalization") {
    check_per_channel(ctx, {1, 2}, {"scale", "B"});
  } else if (op == "LayerNormalization") {
    check_layer_norm(ctx);
  } else if (op == "PRelu" && ctx.node.opset >= 7) {  // before 7: per channel
    if (const Shape* x = known(ctx, 0)) check_broadcasts(ctx, 1, "slope", *x, "X");
  }
}

}  // namespace

void check_node(const OpContext& ctx) {
  if (!ctx.node.domain.empty() && ctx.node.domain != "ai.onnx") return;
  check_attributes(ctx.node);
  check_ranks(ctx);
  check_window_attributes(ctx);
  check_parameter_shapes(ctx);
}

}  // namespace deep500::ops
