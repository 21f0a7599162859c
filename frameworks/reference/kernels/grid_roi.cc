// Spatial sampling: GridSample (opset 16), RoiAlign (opsets 10, 16),
// MaxUnpool (opsets 9, 11), NCHW layouts. Backward: GridSample's (bilinear
// and nearest) to X and the grid, RoiAlign's to X.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"
#include "operators/grid_sampling.h"

namespace deep500::reference {
namespace {

// A value of a floating tensor as double, and v added onto one (rounded once
// for the narrower types).
template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return static_cast<double>(static_cast<float>(v));
}
template <class T>
void accumulate(T& dst, double v) {
  if constexpr (std::is_same_v<T, double>)
    dst += v;
  else
    dst = T(static_cast<float>(as_double(dst) + v));
}

// A sampling op's gradient to X: dX (X's type and shape) zeroed, then, when
// the output gradient is defined and has shape y_shape, body(dx, dy) with
// both as X's element type.
template <class F>
void scatter_backward(const std::string& node, const Tensor& x, const Tensor& gy,
                      const Shape& y_shape, std::span<Tensor> gx, F body) {
  Tensor& dx_t = ops::ensure_output(gx, 0, x.dtype(), x.shape());
  dispatch_float(
      x.dtype(),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* dx = dx_t.data<T>();
        std::fill(dx, dx + x.numel(), T(0.0f));
        if (!gy.defined()) return;
        DEEP500_CHECK(gy.shape() == y_shape, node, ": output gradient has shape ",
                      to_string(gy.shape()), ", expected ", to_string(y_shape));
        body(dx, gy.data<T>());
      },
      node + ": backward");
}

// ---------------------------------------------------------------- GridSample
using ops::grid::Mode;
using ops::grid::Padding;

class GridSampleOp final : public Operator {
 public:
  explicit GridSampleOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 2, node_, ": expected 2 inputs (X, grid), got ",
                  ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    align_ = a.get_int("align_corners", 0) != 0;
    std::string why = ops::grid::parse_mode(a.get_string("mode", "bilinear"), mode_);
    DEEP500_CHECK(why.empty(), node_, ": ", why);
    why = ops::grid::parse_padding(a.get_string("padding_mode", "zeros"), pad_);
    DEEP500_CHECK(why.empty(), node_, ": ", why);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &x = in[0], &grid = in[1];
    const std::string shapes = ops::grid::grid_shapes(x.shape(), grid.shape());
    DEEP500_CHECK(shapes.empty(), node_, ": ", shapes);
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    const int64_t oh = grid.dim(1), ow = grid.dim(2);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), {n, c, oh, ow});
    std::vector<double> g = grid.to_double_vector();
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          for (int64_t b = 0; b < n; ++b)
            for (int64_t ch = 0; ch < c; ++ch) {
              const T* plane = px + (b * c + ch) * h * w;
              // Pixel (iy, ix) of the plane, zero outside.
              auto at = [&](int64_t iy, int64_t ix) -> double {
                return iy >= 0 && iy < h && ix >= 0 && ix < w
                           ? static_cast<double>(plane[iy * w + ix])
                           : 0.0;
              };
              for (int64_t i = 0; i < oh * ow; ++i) {
                const double gx = g[(b * oh * ow + i) * 2], gy = g[(b * oh * ow + i) * 2 + 1];
                const double v = sample(at, gx, gy, h, w);
                T& o = py[(b * c + ch) * oh * ow + i];
                if constexpr (std::is_same_v<T, double>)
                  o = v;
                else
                  o = T(static_cast<float>(v));
              }
            }
        },
        node_);
  }

  bool has_backward() const override { return mode_ != Mode::Bicubic; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, true);
  }
  // dX scatters each output gradient over the taps the forward read; the
  // grid's gradient is the slope of the interpolation along x and y, summed
  // over channels, times the slope of unnormalize and the padding.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Tensor &x = in[0], &grid = in[1];
    const std::string shapes = ops::grid::grid_shapes(x.shape(), grid.shape());
    DEEP500_CHECK(shapes.empty(), node_, ": ", shapes);
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    const int64_t oh = grid.dim(1), ow = grid.dim(2), plane = oh * ow;
    std::vector<double> dgrid(static_cast<size_t>(grid.numel()), 0.0);
    scatter_backward(node_, x, gy[0], {n, c, oh, ow}, gx, [&](auto* dx, const auto* dy) {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(dy)>>;
      const std::vector<double> g = grid.to_double_vector();
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < plane; ++i) {
          const size_t at = static_cast<size_t>((b * plane + i) * 2);
          GridPoint<T> p{b, c, h, w, plane, i, x.data<T>(), dy, dx};
          const auto [dix, diy] = sample_backward(p, g[at], g[at + 1]);
          dgrid[at] = dix, dgrid[at + 1] = diy;
        }
    });
    gx[1] = Tensor::from_vector<double>(grid.shape(), dgrid).cast(grid.dtype());
  }

 private:
  // One output position of one image, for every channel: the input, the
  // output gradient and dX (flat, NCHW).
  template <class T>
  struct GridPoint {
    int64_t b, c, h, w, plane, i;
    const T *x, *dy;
    T* dx;
  };
  // Scatters dX for one output position over all channels and returns the
  // gradient of its grid value (x, y).
  template <class T>
  std::pair<double, double> sample_backward(const GridPoint<T>& p, double gx, double gy) const {
    const double ux = unnormalize(gx, p.w), uy = unnormalize(gy, p.h);
    const double ix = pad(ux, p.w), iy = pad(uy, p.h);
    auto inside = [&](int64_t y, int64_t x) { return y >= 0 && y < p.h && x >= 0 && x < p.w; };
    double dix = 0, diy = 0;
    for (int64_t ch = 0; ch < p.c; ++ch) {
      const int64_t base = (p.b * p.c + ch) * p.h * p.w;
      const double d = as_double(p.dy[(p.b * p.c + ch) * p.plane + p.i]);
      auto value = [&](int64_t y, int64_t x) {
        return inside(y, x) ? as_double(p.x[base + y * p.w + x]) : 0.0;
      };
      auto add = [&](int64_t y, int64_t x, double v) {
        if (inside(y, x)) accumulate(p.dx[base + y * p.w + x], v);
      };
      if (mode_ == Mode::Nearest) {
        add(static_cast<int64_t>(std::nearbyint(iy)), static_cast<int64_t>(std::nearbyint(ix)), d);
        continue;
      }
      const double fx = std::floor(ix), fy = std::floor(iy), lx = ix - fx, ly = iy - fy;
      const auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
      add(y0, x0, d * (1 - ly) * (1 - lx));
      add(y0, x0 + 1, d * (1 - ly) * lx);
      add(y0 + 1, x0, d * ly * (1 - lx));
      add(y0 + 1, x0 + 1, d * ly * lx);
      const double v00 = value(y0, x0), v01 = value(y0, x0 + 1);
      const double v10 = value(y0 + 1, x0), v11 = value(y0 + 1, x0 + 1);
      dix += d * ((v01 - v00) * (1 - ly) + (v11 - v10) * ly);
      diy += d * ((v10 - v00) * (1 - lx) + (v11 - v01) * lx);
    }
    auto scale = [&](int64_t size) {  // d unnormalize / d grid value
      return align_ ? static_cast<double>(size - 1) / 2 : static_cast<double>(size) / 2;
    };
    return {dix * ops::grid::pad_slope(ux, p.w, pad_, align_) * scale(p.w),
            diy * ops::grid::pad_slope(uy, p.h, pad_, align_) * scale(p.h)};
  }

  double unnormalize(double v, int64_t size) const {
    return ops::grid::unnormalize(v, size, align_);
  }
  double pad(double v, int64_t size) const { return ops::grid::pad(v, size, pad_, align_); }
  static double cubic(double t) { return ops::grid::cubic(t); }
  template <class At>
  double sample(const At& at, double gx, double gy, int64_t h, int64_t w) const {
    if (mode_ == Mode::Bicubic) {
      // Taps are padded one by one (the un-padded coordinate sets the weights).
      const double ix = unnormalize(gx, w), iy = unnormalize(gy, h);
      const double fx = std::floor(ix), fy = std::floor(iy);
      double s = 0;
      for (int dy = -1; dy <= 2; ++dy)
        for (int dx = -1; dx <= 2; ++dx) {
          const double wgt = cubic(iy - (fy + dy)) * cubic(ix - (fx + dx));
          const double px = pad(fx + dx, w), py = pad(fy + dy, h);
          s += wgt * at(static_cast<int64_t>(py), static_cast<int64_t>(px));
        }
      return s;
    }
    const double ix = pad(unnormalize(gx, w), w), iy = pad(unnormalize(gy, h), h);
    if (mode_ == Mode::Nearest)
      return at(static_cast<int64_t>(std::nearbyint(iy)), static_cast<int64_t>(std::nearbyint(ix)));
    const double fx = std::floor(ix), fy = std::floor(iy);
    const double lx = ix - fx, ly = iy - fy;
    const auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
    return at(y0, x0) * (1 - ly) * (1 - lx) + at(y0, x0 + 1) * (1 - ly) * lx +
           at(y0 + 1, x0) * ly * (1 - lx) + at(y0 + 1, x0 + 1) * ly * lx;
  }

  std::string node_;
  bool align_;
  Mode mode_ = Mode::Bilinear;
  Padding pad_ = Padding::Zeros;
};

// ------------------------------------------------------------------ RoiAlign
class RoiAlignOp final : public Operator {
 public:
  explicit RoiAlignOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 3, node_,
                  ": expected 3 inputs (X, rois, batch_indices), got ", ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    std::string mode = a.get_string("mode", "avg");
    DEEP500_CHECK(mode == "avg" || mode == "max", node_, ": mode must be avg or max, got '", mode,
                  "'");
    max_ = mode == "max";
    std::string c = a.get_string("coordinate_transformation_mode",
                                 ctx.node.opset >= 16 ? "half_pixel" : "output_half_pixel");
    DEEP500_CHECK(c == "half_pixel" || c == "output_half_pixel", node_,
                  ": coordinate_transformation_mode must be half_pixel or output_half_pixel, got '",
                  c, "'");
    half_pixel_ = c == "half_pixel";
    out_h_ = a.get_int("output_height", 1);
    out_w_ = a.get_int("output_width", 1);
    sampling_ = a.get_int("sampling_ratio", 0);
    scale_ = a.get_float("spatial_scale", 1.0f);
    DEEP500_CHECK(out_h_ >= 1 && out_w_ >= 1 && sampling_ >= 0, node_,
                  ": output_height/width must be >= 1 and sampling_ratio >= 0");
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    const Boxes boxes = read_boxes(in);
    const int64_t nr = static_cast<int64_t>(boxes.batch.size()), c = x.dim(1);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), {nr, c, out_h_, out_w_});
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          for_each_bin(x, boxes, [&](int64_t k, int64_t ch, int64_t bin, const Samples& s) {
            const T* plane = px + (boxes.batch[k] * c + ch) * x.dim(2) * x.dim(3);
            double acc = 0;
            for (size_t j = 0; j < s.size(); ++j) {
              double v[4];
              for (int q = 0; q < 4; ++q)
                v[q] = s[j].weight[q] * static_cast<double>(plane[s[j].index[q]]);
              const double sample = max_ ? std::max(std::max(v[0], v[1]), std::max(v[2], v[3]))
                                         : v[0] + v[1] + v[2] + v[3];
              acc = !max_ ? acc + sample : j == 0 ? sample : std::max(acc, sample);
            }
            const double v = max_ ? acc : acc / static_cast<double>(std::max<size_t>(s.size(), 1));
            T& o = py[(k * c + ch) * out_h_ * out_w_ + bin];
            if constexpr (std::is_same_v<T, double>)
              o = v;
            else
              o = T(static_cast<float>(v));
          });
        },
        node_);
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    if (n > 0) d[0] = true;  // boxes and indices: none
    return d;
  }
  // avg: each bin's gradient spread over its samples' corners by their
  // weights; max: to the corner the forward took.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    const Tensor& x = in[0];
    const Boxes boxes = read_boxes(in);
    const int64_t nr = static_cast<int64_t>(boxes.batch.size()), c = x.dim(1);
    scatter_backward(node_, x, gy[0], {nr, c, out_h_, out_w_}, gx, [&](auto* dx, const auto* dy) {
      const auto* xv = x.data<std::remove_cv_t<std::remove_pointer_t<decltype(dy)>>>();
      for_each_bin(x, boxes, [&](int64_t k, int64_t ch, int64_t bin, const Samples& s) {
        const int64_t base = (boxes.batch[k] * c + ch) * x.dim(2) * x.dim(3);
        const double d = as_double(dy[(k * c + ch) * out_h_ * out_w_ + bin]);
        if (!max_) {
          const double share = d / static_cast<double>(std::max<size_t>(s.size(), 1));
          for (const auto& corners : s)
            for (int q = 0; q < 4; ++q)
              accumulate(dx[base + corners.index[q]], share * corners.weight[q]);
          return;
        }
        double best = 0, best_weight = 0;
        int64_t best_at = -1;
        for (size_t j = 0; j < s.size(); ++j)
          for (int q = 0; q < 4; ++q) {
            const double v = s[j].weight[q] * as_double(xv[base + s[j].index[q]]);
            if (best_at < 0 || v > best)
              best = v, best_at = base + s[j].index[q], best_weight = s[j].weight[q];
          }
        if (best_at >= 0) accumulate(dx[best_at], d * best_weight);
      });
    });
  }

 private:
  struct Boxes {
    std::vector<double> rois;
    std::vector<int64_t> batch;
  };
  using Samples = std::vector<ops::grid::Corners>;

  Boxes read_boxes(std::span<const Tensor> in) const {
    const Tensor &x = in[0], &rois = in[1], &bidx_t = in[2];
    DEEP500_CHECK(x.rank() == 4, node_, ": X must be 4-D NCHW, got ", to_string(x.shape()));
    DEEP500_CHECK(rois.rank() == 2 && rois.dim(1) == 4, node_,
                  ": rois must have shape [num_rois, 4], got ", to_string(rois.shape()));
    const int64_t nr = rois.dim(0);
    DEEP500_CHECK(bidx_t.rank() == 1 && bidx_t.numel() == nr, node_,
                  ": batch_indices must have shape [", nr, "], got ", to_string(bidx_t.shape()));
    Boxes b{rois.to_double_vector(), bidx_t.to_int64_vector()};
    for (int64_t k = 0; k < nr; ++k)
      DEEP500_CHECK(b.batch[k] >= 0 && b.batch[k] < x.dim(0), node_, ": batch_indices[", k,
                    "] = ", b.batch[k], " is out of range [0, ", x.dim(0) - 1, "]");
    return b;
  }

  // Calls f(box, channel, bin, samples) for every output bin: the bilinear
  // corners of the bin's sampling grid (Caffe2/ONNX Runtime border rules;
  // in max mode a sample is its largest weighted corner, as ONNX Runtime).
  template <class F>
  void for_each_bin(const Tensor& x, const Boxes& boxes, const F& f) const {
    const int64_t c = x.dim(1), h = x.dim(2), w = x.dim(3);
    Samples s;
    for (size_t k = 0; k < boxes.batch.size(); ++k) {
      const ops::grid::RoiBox box = ops::grid::roi_box(boxes.rois.data() + k * 4, scale_,
                                                       half_pixel_, out_h_, out_w_, sampling_);
      for (int64_t ph = 0; ph < out_h_; ++ph)
        for (int64_t pw = 0; pw < out_w_; ++pw) {
          s.clear();
          for (int64_t iy = 0; iy < box.grid_h; ++iy)
            for (int64_t ix = 0; ix < box.grid_w; ++ix) {
              const double sy = box.y0 + ph * box.bin_h +
                                (iy + 0.5) * box.bin_h / static_cast<double>(box.grid_h);
              const double sx = box.x0 + pw * box.bin_w +
                                (ix + 0.5) * box.bin_w / static_cast<double>(box.grid_w);
              s.push_back(ops::grid::roi_corners(h, w, sy, sx));
            }
          for (int64_t ch = 0; ch < c; ++ch) f(static_cast<int64_t>(k), ch, ph * out_w_ + pw, s);
        }
    }
  }

  std::string node_;
  bool max_ = false, half_pixel_ = true;
  int64_t out_h_, out_w_, sampling_;
  double scale_;
};

// ----------------------------------------------------------------- MaxUnpool
class MaxUnpoolOp final : public Operator {
 public:
  explicit MaxUnpoolOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 2 || ctx.num_inputs() == 3, node_,
                  ": expected 2 or 3 inputs (X, I, output_shape), got ", ctx.num_inputs());
    const auto& a = ctx.node.attributes;
    kernel_ = a.get_ints("kernel_shape");
    strides_ = a.get_ints("strides", std::vector<int64_t>(kernel_.size(), 1));
    pads_ = a.get_ints("pads", std::vector<int64_t>(2 * kernel_.size(), 0));
    DEEP500_CHECK(strides_.size() == kernel_.size() && pads_.size() == 2 * kernel_.size(), node_,
                  ": kernel_shape, strides and pads lengths disagree");
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor &x = in[0], &ind = in[1];
    const auto k = static_cast<int64_t>(kernel_.size());
    DEEP500_CHECK(x.rank() == k + 2, node_, ": X must have rank ", k + 2, " for a ", k,
                  "-D kernel, got ", to_string(x.shape()));
    DEEP500_CHECK(ind.shape() == x.shape() && ind.dtype() == DataType::Int64, node_,
                  ": I must be int64 with the shape of X, got ", to_string(ind.desc()));
    Shape inferred = {x.dim(0), x.dim(1)};
    for (int64_t d = 0; d < k; ++d)
      inferred.push_back((x.dim(d + 2) - 1) * strides_[d] + kernel_[d] - pads_[d] - pads_[d + k]);
    Shape ys = inferred;
    if (const Tensor* os = ops::optional_input(in, 2)) {
      ys = os->to_int64_vector();
      DEEP500_CHECK(static_cast<int64_t>(ys.size()) == x.rank(), node_, ": output_shape ",
                    to_string(ys), " must have rank ", x.rank());
      for (size_t d = 0; d < ys.size(); ++d)
        DEEP500_CHECK(ys[d] >= inferred[d], node_, ": output_shape ", to_string(ys),
                      " is smaller than the inferred shape ", to_string(inferred));
    }
    // Indices address the inferred (unpadded) output; a larger output_shape
    // adds padding at the end of each axis (as the ONNX test data expects).
    const int64_t total = numel(inferred);
    Shape istr = contiguous_strides(inferred), ostr = contiguous_strides(ys);
    std::vector<int64_t> idx = ind.to_int64_vector();
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), ys);
    dispatch_numeric(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>();
          T* py = y.data<T>();
          for (int64_t i = 0; i < y.numel(); ++i) py[i] = T(0);
          for (int64_t i = 0; i < x.numel(); ++i) {
            DEEP500_CHECK(idx[i] >= 0 && idx[i] < total, node_, ": index ", idx[i],
                          " is out of range [0, ", total - 1, "] for the unpooled shape ",
                          to_string(inferred));
            int64_t off = 0;
            for (size_t d = 0; d < inferred.size(); ++d)
              off += (idx[i] / istr[d]) % inferred[d] * ostr[d];
            py[off] = px[i];
          }
        },
        node_);
  }

 private:
  std::string node_;
  std::vector<int64_t> kernel_, strides_, pads_;
};

}  // namespace

void register_grid_roi(Registry& r) {
  add_kernel<GridSampleOp>(r, "GridSample", 16);
  add_kernel<RoiAlignOp>(r, "RoiAlign", 10);
  add_kernel<MaxUnpoolOp>(r, "MaxUnpool", 9);
}

}  // namespace deep500::reference
