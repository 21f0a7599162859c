#include "recipes/tasks/processing.h"

#include <algorithm>

#include "deep/error.h"
#include "deep/text.h"
#include "operators/run_node.h"
#include "validation/op_specs.h"

namespace deep500::recipes {

namespace {

// Runs one ONNX operator (opset 17) on the reference backend; output `which`.
Tensor run_op(const std::string& op, const std::string& attributes,
              const std::vector<Tensor>& inputs, int outputs = 1, int which = 0) {
  validation::OpSpec spec;
  spec.label = op;
  spec.op_type = op;
  spec.attributes = attributes;
  spec.num_outputs = outputs;
  for (const auto& t : inputs) {
    validation::InputSpec in;
    in.absent = !t.defined();
    spec.inputs.push_back(in);
  }
  return ops::run_node(spec.node(), inputs, "reference").at(static_cast<size_t>(which));
}

Tensor int64s(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

std::string perm_text(const ProcessingStep& s) {
  std::vector<std::string> perm;
  for (char axis : s.to) perm.push_back(std::to_string(s.from.find(axis)));
  return "perm=" + join(perm, ",");
}

void need_rank(const Tensor& x, int64_t least, const std::string& step) {
  DEEP500_CHECK(x.rank() >= least, step, ": expected a tensor of rank >= ", least, ", got shape ",
                to_string(x.desc()));
}

Tensor apply(const ProcessingStep& s, const Tensor& x) {
  const size_t r = static_cast<size_t>(x.rank());
  if (s.step == "layout") {
    DEEP500_CHECK(r == s.from.size(), "layout: ", s.from, " has ", s.from.size(),
                  " axes, the tensor ", r, " (shape ", to_string(x.desc()), ")");
    return run_op("Transpose", perm_text(s), {x});
  }
  if (s.step == "resize" || s.step == "crop") {
    need_rank(x, 2, s.step);
    Shape shape = x.shape();
    const int64_t h = shape[r - 2], w = shape[r - 1];
    if (s.step == "resize") {
      shape[r - 2] = s.size[0];
      shape[r - 1] = s.size[1];
      return run_op("Resize", "mode=linear", {x, Tensor(), Tensor(), int64s(shape)});
    }
    DEEP500_CHECK(s.size[0] <= h && s.size[1] <= w, "crop: ", s.size[0], "x", s.size[1],
                  " does not fit in ", h, "x", w);
    const int64_t top = (h - s.size[0]) / 2, left = (w - s.size[1]) / 2;
    const int64_t rank = static_cast<int64_t>(r);
    return run_op("Slice", "",
                  {x, int64s({top, left}), int64s({top + s.size[0], left + s.size[1]}),
                   int64s({rank - 2, rank - 1})});
  }
  if (s.step == "normalize") {
    need_rank(x, 2, s.step);
    const int64_t channels = x.shape()[1];
    DEEP500_CHECK(channels == static_cast<int64_t>(s.mean.size()), "normalize: ", s.mean.size(),
                  " means for ", channels, " channels (axis 1 of shape ", to_string(x.desc()), ")");
    Shape per_channel(r - 1, 1);
    per_channel[0] = channels;
    std::vector<float> mean(s.mean.begin(), s.mean.end()), stdev(s.stdev.begin(), s.stdev.end());
    const Tensor f = run_op("Cast", "to=1", {x});
    const Tensor centred = run_op("Sub", "", {f, Tensor::from_vector<float>(per_channel, mean)});
    return run_op("Div", "", {centred, Tensor::from_vector<float>(per_channel, stdev)});
  }
  need_rank(x, 1, s.step);
  if (s.step == "softmax") return run_op("Softmax", "axis=-1", {x});
  if (s.step == "argmax") return run_op("ArgMax", "axis=-1 keepdims=0", {x});
  DEEP500_CHECK(s.k <= x.shape()[r - 1], "top_k: k = ", s.k, " is more than the ", x.shape()[r - 1],
                " values of the last axis");
  return run_op("TopK", "axis=-1", {x, int64s({s.k})}, 2, 1);
}

}  // namespace

std::vector<std::string> processing_steps() {
  return {"layout", "resize", "crop", "normalize", "softmax", "argmax", "top_k"};
}

void check_step(const ProcessingStep& s) {
  const auto known = processing_steps();
  if (std::find(known.begin(), known.end(), s.step) == known.end()) {
    const std::string hint = closest_name(s.step, known);
    throw Error(cat("unknown step '", s.step, "'",
                    hint.empty() ? "" : cat(" (did you mean '", hint, "'?)"),
                    "; known: ", join(known, ", ")));
  }
  if (s.step == "layout") {
    std::string a = s.from, b = s.to;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    DEEP500_CHECK(!a.empty() && a == b && std::unique(a.begin(), a.end()) == a.end(),
                  "layout: from and to must name the same distinct axes, got '", s.from, "' and '",
                  s.to, "'");
  }
  if (s.step == "resize" || s.step == "crop")
    DEEP500_CHECK(s.size.size() == 2 && s.size[0] >= 1 && s.size[1] >= 1 &&
                      s.size[0] <= (1 << 16) && s.size[1] <= (1 << 16),
                  s.step, ": expected size: [H, W] with 1 <= H, W <= 65536");
  if (s.step == "normalize") {
    DEEP500_CHECK(!s.mean.empty() && s.mean.size() == s.stdev.size(),
                  "normalize: expected mean and std with one value per channel each");
    for (double v : s.stdev) DEEP500_CHECK(v > 0, "normalize: std must be > 0, got ", v);
  }
  if (s.step == "top_k") DEEP500_CHECK(s.k >= 1, "top_k: expected k >= 1");
}

Tensor apply_steps(const std::vector<ProcessingStep>& steps, Tensor x) {
  for (const auto& s : steps) x = apply(s, x);
  return x;
}

}  // namespace deep500::recipes
