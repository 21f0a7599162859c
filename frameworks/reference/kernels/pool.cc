// Pooling: MaxPool (with Indices, storage_order, dilations, ceil_mode),
// AveragePool (count_include_pad, ceil_mode), LpPool, and the global variants
// GlobalMaxPool / GlobalAveragePool / GlobalLpPool. Backward for MaxPool (to
// the argmax positions), AveragePool, GlobalMaxPool and GlobalAveragePool.
#include <cmath>
#include <limits>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"
#include "frameworks/reference/kernels/nn_common.h"

namespace deep500::reference {
namespace {

enum class Pool { Max, Avg, Lp };

// Calls f(x_index) for each tap of output position o (od, oh, ow) that lies
// inside the input plane; returns the number of taps inside the padded input
// (the count_include_pad divisor).
template <class F>
int64_t visit_window(const nn::Window& w, int64_t od, int64_t oh, int64_t ow, F&& f) {
  const int64_t o[3] = {od, oh, ow};
  int64_t lo[3], padded = 1;
  for (int i = 0; i < 3; ++i) {
    lo[i] = o[i] * w.stride[i] - w.pad_begin[i];
    int64_t n = 0;
    for (int64_t k = 0; k < w.kernel[i]; ++k) {
      const int64_t p = lo[i] + k * w.dilation[i];
      n += p >= -w.pad_begin[i] && p < w.in[i] + w.pad_end[i];
    }
    padded *= n;
  }
  for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
    const int64_t id = lo[0] + kd * w.dilation[0];
    if (id < 0 || id >= w.in[0]) continue;
    for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
      const int64_t ih = lo[1] + kh * w.dilation[1];
      if (ih < 0 || ih >= w.in[1]) continue;
      for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
        const int64_t iw = lo[2] + kw * w.dilation[2];
        if (iw >= 0 && iw < w.in[2]) f((id * w.in[1] + ih) * w.in[2] + iw);
      }
    }
  }
  return padded;
}

// Calls f(plane, y_index_in_plane, od, oh, ow) over every output position of
// every (n, c) plane.
template <class F>
void for_each_output(int64_t planes, const nn::Window& w, F&& f) {
  for (int64_t p = 0; p < planes; ++p) {
    int64_t yi = 0;
    for (int64_t od = 0; od < w.out[0]; ++od)
      for (int64_t oh = 0; oh < w.out[1]; ++oh)
        for (int64_t ow = 0; ow < w.out[2]; ++ow) f(p, yi++, od, oh, ow);
  }
}

double read_p(const ops::NodeSpec& node) {
  // LpPool-1 / GlobalLpPool-1 declare p as a float, later opsets as an int.
  auto it = node.attributes.all().find("p");
  double p = 2.0;
  if (it != node.attributes.all().end())
    p = it->second.kind == ops::Attribute::Kind::Float ? it->second.f
                                                       : static_cast<double>(it->second.i);
  DEEP500_CHECK(p > 0, node.describe(), ": attribute p must be positive, got ", p);
  return p;
}

// Sliding-window pools: Kind selects MaxPool, AveragePool or LpPool.
template <Pool K>
class PoolOp final : public Operator {
 public:
  explicit PoolOp(const OpContext& ctx)
      : node_(ctx.node.describe()), attrs_(nn::parse_window_attrs(ctx.node)) {
    const ops::Attributes& at = ctx.node.attributes;
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    DEEP500_CHECK(!attrs_.kernel_shape.empty(), node_, ": attribute kernel_shape is required");
    const DataType t = ctx.inputs[0].dtype;
    if constexpr (K == Pool::Max)
      DEEP500_CHECK(is_floating(t) || t == DataType::Int8 || t == DataType::UInt8, node_,
                    ": input X must be floating-point, int8 or uint8, got ", name_of(t));
    else
      DEEP500_CHECK(is_floating(t), node_, ": input X must be floating-point, got ", name_of(t));
    storage_order_ = at.get_int("storage_order", 0);
    DEEP500_CHECK(storage_order_ == 0 || storage_order_ == 1, node_,
                  ": storage_order must be 0 or 1, got ", storage_order_);
    count_include_pad_ = at.get_int("count_include_pad", 0) != 0;
    if constexpr (K == Pool::Lp) p_ = read_p(ctx.node);
    window(ctx.inputs[0].shape);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    const nn::Window w = window(x.shape());
    Shape yshape{x.dim(0), x.dim(1)};
    for (int64_t s : w.out_shape()) yshape.push_back(s);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), yshape);
    const int64_t planes = x.dim(0) * x.dim(1);
    if constexpr (K == Pool::Max) {
      std::vector<int64_t> arg = argmax(x, w);
      dispatch_numeric(
          x.dtype(),
          [&](auto tag) {
            using T = typename decltype(tag)::type;
            const T* px = x.data<T>();
            T* py = y.data<T>();
            for (int64_t i = 0; i < y.numel(); ++i) py[i] = px[arg[i]];
          },
          node_);
      if (out.size() > 1) {
        Tensor& idx = ops::ensure_output(out, 1, DataType::Int64, yshape);
        int64_t* pi = idx.data<int64_t>();
        for (int64_t i = 0; i < y.numel(); ++i) pi[i] = storage_index(w, arg[i]);
      }
      return;
    }
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using Acc = nn::acc_t<typename decltype(tag)::type>;
          const std::vector<Acc> xv = nn::to_vector<Acc>(x);
          std::vector<Acc> yv(static_cast<size_t>(y.numel()));
          const int64_t isz = w.in_size(), osz = w.out_size();
          for_each_output(
              planes, w, [&](int64_t p, int64_t yi, int64_t od, int64_t oh, int64_t ow) {
                const Acc* xp = xv.data() + p * isz;
                Acc sum = 0;
                int64_t inside = 0;
                const int64_t padded = visit_window(w, od, oh, ow, [&](int64_t i) {
                  sum += K == Pool::Lp ? static_cast<Acc>(std::pow(std::abs(xp[i]), p_)) : xp[i];
                  ++inside;
                });
                if constexpr (K == Pool::Lp)
                  yv[p * osz + yi] = static_cast<Acc>(std::pow(sum, 1.0 / p_));
                else
                  yv[p * osz + yi] = sum / static_cast<Acc>(count_include_pad_ ? padded : inside);
              });
          nn::store(yv, y);
        },
        node_);
  }

  bool has_backward() const override { return K != Pool::Lp; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    if (K != Pool::Lp && n > 0) d[0] = true;
    return d;
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    DEEP500_CHECK(K != Pool::Lp, node_, ": LpPool has no backward");
    if (!gy[0].defined()) return;
    const Tensor& x = in[0];
    const nn::Window w = window(x.shape());
    const int64_t planes = x.dim(0) * x.dim(1), isz = w.in_size(), osz = w.out_size();
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using Acc = nn::acc_t<typename decltype(tag)::type>;
          const std::vector<Acc> g = nn::to_vector<Acc>(gy[0]);
          std::vector<Acc> dx(static_cast<size_t>(x.numel()), Acc(0));
          if constexpr (K == Pool::Max) {
            const std::vector<int64_t> arg = argmax(x, w);
            for (size_t i = 0; i < g.size(); ++i) dx[arg[i]] += g[i];
          } else {
            for_each_output(
                planes, w, [&](int64_t p, int64_t yi, int64_t od, int64_t oh, int64_t ow) {
                  int64_t inside = 0;
                  const int64_t padded = visit_window(w, od, oh, ow, [&](int64_t) { ++inside; });
                  const int64_t divisor = count_include_pad_ ? padded : inside;
                  const Acc share = g[p * osz + yi] / static_cast<Acc>(divisor);
                  visit_window(w, od, oh, ow, [&](int64_t i) { dx[p * isz + i] += share; });
                });
          }
          gx[0] = nn::from_vector(dx, x.dtype(), x.shape());
        },
        node_);
  }

 private:
  nn::Window window(const Shape& x) const {
    DEEP500_CHECK(x.size() >= 3, node_, ": input X must have rank >= 3 [N, C, spatial...], got ",
                  to_string(x));
    return nn::make_window(node_, attrs_, Shape(x.begin() + 2, x.end()), attrs_.kernel_shape);
  }

  // Flat input index (over the whole tensor) of each output's maximum; the
  // first maximum wins on ties.
  std::vector<int64_t> argmax(const Tensor& x, const nn::Window& w) const {
    const int64_t planes = x.dim(0) * x.dim(1), isz = w.in_size(), osz = w.out_size();
    std::vector<int64_t> arg(static_cast<size_t>(planes * osz));
    dispatch_numeric(
        x.dtype(),
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          using Acc = nn::acc_t<T>;
          const T* px = x.data<T>();
          for_each_output(planes, w,
                          [&](int64_t p, int64_t yi, int64_t od, int64_t oh, int64_t ow) {
                            const T* xp = px + p * isz;
                            int64_t best = -1;
                            visit_window(w, od, oh, ow, [&](int64_t i) {
                              if (best < 0 || nn::to_acc<Acc>(xp[i]) > nn::to_acc<Acc>(xp[best]))
                                best = i;
                            });
                            // A window entirely in padding cannot occur (make_window checks the
                            // fit).
                            arg[p * osz + yi] = p * isz + std::max<int64_t>(best, 0);
                          });
        },
        node_);
    return arg;
  }

  // Indices output: row-major flat index, or with storage_order=1 the
  // spatial part in column-major order (plane offset stays row-major).
  int64_t storage_index(const nn::Window& w, int64_t flat) const {
    if (storage_order_ == 0) return flat;
    const int64_t isz = w.in_size(), plane = flat / isz, r = flat % isz;
    const int64_t iw = r % w.in[2], ih = (r / w.in[2]) % w.in[1], id = r / (w.in[2] * w.in[1]);
    return plane * isz + id + ih * w.in[0] + iw * w.in[0] * w.in[1];
  }

  std::string node_;
  nn::WindowAttrs attrs_;
  int64_t storage_order_ = 0;
  bool count_include_pad_ = false;
  double p_ = 2.0;
};

// Global pools reduce all spatial dims: [N, C, ...] -> [N, C, 1, ...].
template <Pool K>
class GlobalPoolOp final : public Operator {
 public:
  explicit GlobalPoolOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input, got ", ctx.num_inputs());
    DEEP500_CHECK(is_floating(ctx.inputs[0].dtype), node_, ": input X must be floating-point, got ",
                  name_of(ctx.inputs[0].dtype));
    DEEP500_CHECK(ctx.inputs[0].shape.size() >= 2, node_,
                  ": input X must have rank >= 2 [N, C, ...], got ",
                  to_string(ctx.inputs[0].shape));
    if constexpr (K == Pool::Lp) p_ = read_p(ctx.node);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    const int64_t planes = x.dim(0) * x.dim(1), size = x.numel() / std::max<int64_t>(planes, 1);
    Shape yshape(x.shape().size(), 1);
    yshape[0] = x.dim(0);
    yshape[1] = x.dim(1);
    Tensor& y = ops::ensure_output(out, 0, x.dtype(), yshape);
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using Acc = nn::acc_t<typename decltype(tag)::type>;
          const std::vector<Acc> xv = nn::to_vector<Acc>(x);
          std::vector<Acc> yv(static_cast<size_t>(planes));
          for (int64_t p = 0; p < planes; ++p) {
            const Acc* xp = xv.data() + p * size;
            Acc r = K == Pool::Max ? -std::numeric_limits<Acc>::infinity() : Acc(0);
            for (int64_t i = 0; i < size; ++i) {
              if constexpr (K == Pool::Max)
                r = std::max(r, xp[i]);
              else if constexpr (K == Pool::Avg)
                r += xp[i];
              else
                r += static_cast<Acc>(std::pow(std::abs(xp[i]), p_));
            }
            if constexpr (K == Pool::Avg) r /= static_cast<Acc>(size);
            if constexpr (K == Pool::Lp) r = static_cast<Acc>(std::pow(r, 1.0 / p_));
            yv[p] = r;
          }
          nn::store(yv, y);
        },
        node_);
  }

  bool has_backward() const override { return K != Pool::Lp; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, K != Pool::Lp);
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    DEEP500_CHECK(K != Pool::Lp, node_, ": GlobalLpPool has no backward");
    if (!gy[0].defined()) return;
    const Tensor& x = in[0];
    const int64_t planes = x.dim(0) * x.dim(1), size = x.numel() / std::max<int64_t>(planes, 1);
    dispatch_float(
        x.dtype(),
        [&](auto tag) {
          using Acc = nn::acc_t<typename decltype(tag)::type>;
          const std::vector<Acc> xv = nn::to_vector<Acc>(x), g = nn::to_vector<Acc>(gy[0]);
          std::vector<Acc> dx(xv.size(), Acc(0));
          for (int64_t p = 0; p < planes; ++p) {
            if constexpr (K == Pool::Avg) {
              for (int64_t i = 0; i < size; ++i) dx[p * size + i] = g[p] / static_cast<Acc>(size);
            } else {
              int64_t best = 0;  // first maximum gets the gradient
              for (int64_t i = 1; i < size; ++i)
                if (xv[p * size + i] > xv[p * size + best]) best = i;
              if (size > 0) dx[p * size + best] = g[p];
            }
          }
          gx[0] = nn::from_vector(dx, x.dtype(), x.shape());
        },
        node_);
  }

 private:
  std::string node_;
  double p_ = 2.0;
};

}  // namespace

void register_pool(Registry& r) {
  add_kernel<PoolOp<Pool::Max>>(r, "MaxPool");
  add_kernel<PoolOp<Pool::Avg>>(r, "AveragePool");
  add_kernel<PoolOp<Pool::Lp>>(r, "LpPool");
  add_kernel<GlobalPoolOp<Pool::Max>>(r, "GlobalMaxPool");
  add_kernel<GlobalPoolOp<Pool::Avg>>(r, "GlobalAveragePool");
  add_kernel<GlobalPoolOp<Pool::Lp>>(r, "GlobalLpPool");
}

}  // namespace deep500::reference
