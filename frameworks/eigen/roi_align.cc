// RoiAlign (opsets 10, 16), avg or max, both coordinate modes,
// float32/float64: every bin's sampling points and their bilinear corners
// (operators/grid_sampling.h, as every backend computes them) are worked out
// once per box, then every channel is a weighted gather of those corners.
// Backward: the reference kernel (it has none today).
#include <algorithm>

#include "frameworks/eigen/common.h"
#include "operators/grid_sampling.h"
#include "operators/reference_fallback.h"

namespace deep500::eigen {
namespace {

class RoiAlignOp final : public ops::WithReferenceBackward {
 public:
  explicit RoiAlignOp(const OpContext& ctx)
      : WithReferenceBackward(ctx), node_(ctx.node.describe()) {
    const auto& a = ctx.node.attributes;
    max_ = a.get_string("mode", "avg") == "max";
    half_pixel_ =
        a.get_string("coordinate_transformation_mode",
                     ctx.node.opset >= 16 ? "half_pixel" : "output_half_pixel") == "half_pixel";
    out_h_ = a.get_int("output_height", 1);
    out_w_ = a.get_int("output_width", 1);
    sampling_ = a.get_int("sampling_ratio", 0);
    scale_ = a.get_float("spatial_scale", 1.0f);
  }

  static std::string refusal(const OpContext& ctx) {
    if (ctx.num_inputs() != 3) return "expected 3 inputs (X, rois, batch_indices)";
    std::string why = float_refusal(ctx, 2);
    if (!why.empty()) return why;
    const auto& a = ctx.node.attributes;
    const std::string mode = a.get_string("mode", "avg");
    const std::string c = a.get_string("coordinate_transformation_mode", "half_pixel");
    if ((mode != "avg" && mode != "max") || (c != "half_pixel" && c != "output_half_pixel") ||
        a.get_int("output_height", 1) < 1 || a.get_int("output_width", 1) < 1 ||
        a.get_int("sampling_ratio", 0) < 0)
      return "attributes the reference kernel reports";
    return {};
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &x = in[0], &rois = in[1], &batch = in[2];
    DEEP500_CHECK(x.rank() == 4, node_, ": X must be 4-D NCHW, got ", to_string(x.shape()));
    DEEP500_CHECK(rois.rank() == 2 && rois.dim(1) == 4, node_,
                  ": rois must have shape [num_rois, 4], got ", to_string(rois.shape()));
    const int64_t boxes = rois.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    DEEP500_CHECK(batch.rank() == 1 && batch.numel() == boxes, node_,
                  ": batch_indices must have shape [", boxes, "], got ", to_string(batch.shape()));
    const std::vector<double> r = rois.to_double_vector();
    const std::vector<int64_t> index = batch.to_int64_vector();
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), {boxes, c, out_h_, out_w_});
    dispatch(
        x.dtype(),
        [&](auto tag) {
          using T = decltype(tag);
          for (int64_t k = 0; k < boxes; ++k) {
            DEEP500_CHECK(index[k] >= 0 && index[k] < x.dim(0), node_, ": batch_indices[", k,
                          "] = ", index[k], " is out of range [0, ", x.dim(0) - 1, "]");
            const auto box = ops::grid::roi_box(r.data() + k * 4, scale_, half_pixel_, out_h_,
                                                out_w_, sampling_);
            const std::vector<ops::grid::Corners> corners = sample_corners(box, h, w);
            const int64_t per_bin = box.grid_h * box.grid_w;
            const double norm = 1.0 / static_cast<double>(std::max<int64_t>(per_bin, 1));
            for (int64_t ch = 0; ch < c; ++ch) {
              const T* plane = x.data<T>() + (index[k] * c + ch) * h * w;
              T* dst = y.data<T>() + (k * c + ch) * out_h_ * out_w_;
              for (int64_t bin = 0; bin < out_h_ * out_w_; ++bin)
                dst[bin] = static_cast<T>(pool(plane, corners.data() + bin * per_bin, per_bin) *
                                          (max_ ? 1 : norm));
            }
          }
        },
        node_);
  }

 private:
  // The corners of every sampling point, bin by bin (row-major bins).
  std::vector<ops::grid::Corners> sample_corners(const ops::grid::RoiBox& b, int64_t h,
                                                 int64_t w) const {
    std::vector<ops::grid::Corners> out;
    for (int64_t ph = 0; ph < out_h_; ++ph)
      for (int64_t pw = 0; pw < out_w_; ++pw)
        for (int64_t iy = 0; iy < b.grid_h; ++iy)
          for (int64_t ix = 0; ix < b.grid_w; ++ix) {
            const double sy =
                b.y0 + ph * b.bin_h + (iy + 0.5) * b.bin_h / static_cast<double>(b.grid_h);
            const double sx =
                b.x0 + pw * b.bin_w + (ix + 0.5) * b.bin_w / static_cast<double>(b.grid_w);
            out.push_back(ops::grid::roi_corners(h, w, sy, sx));
          }
    return out;
  }

  // A bin's samples: their sum (avg) or the largest weighted corner of any
  // sample (max, the ONNX Runtime definition).
  template <class T>
  double pool(const T* plane, const ops::grid::Corners* s, int64_t n) const {
    double acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      double v[4];
      for (int j = 0; j < 4; ++j) v[j] = s[i].weight[j] * static_cast<double>(plane[s[i].index[j]]);
      if (!max_)
        acc += v[0] + v[1] + v[2] + v[3];
      else
        acc = i == 0 ? std::max({v[0], v[1], v[2], v[3]}) : std::max({acc, v[0], v[1], v[2], v[3]});
    }
    return acc;
  }

  std::string node_;
  bool max_ = false, half_pixel_ = true;
  int64_t out_h_ = 1, out_w_ = 1, sampling_ = 0;
  float scale_ = 1;
};

}  // namespace

void register_roi_align(Registry& r) {
  add_kernel<RoiAlignOp>(r, "RoiAlign", 10);
}

}  // namespace deep500::eigen
