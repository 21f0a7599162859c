// Signal processing: HannWindow, HammingWindow, BlackmanWindow, DFT, STFT,
// MelWeightMatrix (opset 17). Transforms are naive O(n^2) DFTs in double:
// this is the oracle, not the fast path.
#include <cmath>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"

namespace deep500::reference {
namespace {

int64_t scalar_int(const Tensor& t, const std::string& what) {
  DEEP500_CHECK(t.numel() == 1, what, ": expected a scalar, got shape ", to_string(t.shape()));
  DEEP500_CHECK(is_integer(t.dtype()), what, ": expected an integer, got ", name_of(t.dtype()));
  return static_cast<int64_t>(t.at_as_double(0));
}

double scalar_double(const Tensor& t, const std::string& what) {
  DEEP500_CHECK(t.numel() == 1, what, ": expected a scalar, got shape ", to_string(t.shape()));
  return t.at_as_double(0);
}

DataType output_datatype(const OpContext& ctx) {
  auto dt = static_cast<DataType>(ctx.node.attributes.get_int("output_datatype", 1));
  dispatch_numeric(
      dt, [](auto) {}, ctx.node.describe() + ": output_datatype");
  return dt;
}

enum class Window { Hann, Hamming, Blackman };

template <Window W>
class WindowOp final : public Operator {
 public:
  explicit WindowOp(const OpContext& ctx)
      : node_(ctx.node.describe()),
        dtype_(output_datatype(ctx)),
        periodic_(ctx.node.attributes.get_int("periodic", 1) != 0) {
    DEEP500_CHECK(ctx.num_inputs() == 1, node_, ": expected 1 input (size)");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const int64_t n = scalar_int(in[0], node_ + " size");
    DEEP500_CHECK(n >= 0, node_, ": size must be >= 0, got ", n);
    const double denom = periodic_ ? static_cast<double>(n) : static_cast<double>(n - 1);
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) {
      const double x = denom > 0 ? 2 * M_PI * static_cast<double>(i) / denom : 0.0;
      if (W == Window::Hann) v[i] = 0.5 - 0.5 * std::cos(x);
      if (W == Window::Hamming) v[i] = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(x);
      if (W == Window::Blackman) v[i] = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
    }
    ops::ensure_output(out, 0, dtype_, {n})
        .copy_from(Tensor::from_vector<double>({n}, v).cast(dtype_));
  }

 private:
  std::string node_;
  DataType dtype_;
  bool periodic_;
};

// out[k] = sum_j in[j] * exp(sign * 2*pi*i*j*k/n), for complex `in` of length
// `n_in` zero-padded/truncated to n; returns the first `n_out` bins.
void dft_1d(const double* re, const double* im, int64_t stride, int64_t n_in, int64_t n,
            bool inverse, int64_t n_out, double* out_re, double* out_im, int64_t out_stride) {
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < n_out; ++k) {
    double sr = 0, si = 0;
    for (int64_t j = 0; j < std::min(n_in, n); ++j) {
      const double ang =
          sign * 2 * M_PI * static_cast<double>((j * k) % n) / static_cast<double>(n);
      const double c = std::cos(ang), s = std::sin(ang);
      const double xr = re[j * stride], xi = im ? im[j * stride] : 0.0;
      sr += xr * c - xi * s;
      si += xr * s + xi * c;
    }
    if (inverse) {
      sr /= static_cast<double>(n);
      si /= static_cast<double>(n);
    }
    out_re[k * out_stride] = sr;
    out_im[k * out_stride] = si;
  }
}

class DftOp final : public Operator {
 public:
  explicit DftOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    const auto& at = ctx.node.attributes;
    axis_ = at.get_int("axis", 1);
    inverse_ = at.get_int("inverse", 0) != 0;
    onesided_ = at.get_int("onesided", 0) != 0;
    DEEP500_CHECK(ctx.num_inputs() >= 1, node_, ": expected an input");
    dispatch_float(
        ctx.inputs[0].dtype, [](auto) {}, node_ + " input");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    const int64_t r = x.rank();
    DEEP500_CHECK(r >= 2 && (x.dim(-1) == 1 || x.dim(-1) == 2), node_,
                  ": input must be [batch, ..., 1 or 2], got ", to_string(x.shape()));
    const int64_t axis = normalize_axis(axis_, r, node_ + " axis");
    DEEP500_CHECK(axis >= 1 && axis < r - 1, node_, ": axis must be a signal axis, got ", axis_);
    const bool complex = x.dim(-1) == 2;
    DEEP500_CHECK(!(onesided_ && complex), node_, ": onesided needs a real input");
    const int64_t n_in = x.dim(axis);
    int64_t n = n_in;
    if (auto* len = ops::optional_input(in, 1)) n = scalar_int(*len, node_ + " dft_length");
    DEEP500_CHECK(n >= 1, node_, ": dft_length must be >= 1");
    const int64_t n_out = onesided_ ? n / 2 + 1 : n;
    Shape os = x.shape();
    os[axis] = n_out;
    os.back() = 2;
    std::vector<double> xv = x.to_double_vector(), yv(numel(os), 0.0);
    // Iterate over all positions except the transformed axis and the complex one.
    const int64_t comp = x.dim(-1);
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= x.dim(i);
    for (int64_t i = axis + 1; i < r - 1; ++i) inner *= x.dim(i);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const double* src = &xv[(o * n_in * inner + i) * comp];
        double* dst = &yv[(o * n_out * inner + i) * 2];
        dft_1d(src, complex ? src + 1 : nullptr, inner * comp, n_in, n, inverse_, n_out, dst,
               dst + 1, inner * 2);
      }
    ops::ensure_output(out, 0, x.dtype(), os)
        .copy_from(Tensor::from_vector<double>(os, yv).cast(x.dtype()));
  }

 private:
  std::string node_;
  int64_t axis_ = 1;
  bool inverse_ = false, onesided_ = false;
};

// STFT: signal [batch, length, 1|2], frame_step, window?, frame_length?
// -> [batch, frames, bins, 2].
class StftOp final : public Operator {
 public:
  explicit StftOp(const OpContext& ctx) : node_(ctx.node.describe()) {
    onesided_ = ctx.node.attributes.get_int("onesided", 1) != 0;
    DEEP500_CHECK(ctx.num_inputs() >= 2, node_, ": expected signal and frame_step inputs");
    dispatch_float(
        ctx.inputs[0].dtype, [](auto) {}, node_ + " signal");
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const Tensor& x = in[0];
    DEEP500_CHECK(x.rank() == 3 && (x.dim(2) == 1 || x.dim(2) == 2), node_,
                  ": signal must be [batch, length, 1 or 2], got ", to_string(x.shape()));
    const int64_t step = scalar_int(in[1], node_ + " frame_step");
    DEEP500_CHECK(step >= 1, node_, ": frame_step must be >= 1");
    const Tensor* win = ops::optional_input(in, 2);
    const Tensor* len = ops::optional_input(in, 3);
    int64_t flen = -1;
    std::vector<double> w;
    if (win) {
      DEEP500_CHECK(win->rank() == 1, node_, ": window must be 1-D");
      w = win->to_double_vector();
      flen = win->dim(0);
    }
    if (len) {
      int64_t l = scalar_int(*len, node_ + " frame_length");
      DEEP500_CHECK(flen < 0 || flen == l, node_, ": frame_length ", l,
                    " differs from the window length ", flen);
      flen = l;
    }
    DEEP500_CHECK(flen >= 1, node_, ": needs a window or a frame_length");
    if (w.empty()) w.assign(flen, 1.0);
    const bool complex = x.dim(2) == 2;
    DEEP500_CHECK(!(onesided_ && complex), node_, ": onesided needs a real signal");
    const int64_t B = x.dim(0), L = x.dim(1), comp = x.dim(2);
    DEEP500_CHECK(L >= flen, node_, ": signal length ", L, " is shorter than a frame (", flen, ")");
    const int64_t frames = 1 + (L - flen) / step;
    const int64_t bins = onesided_ ? flen / 2 + 1 : flen;
    Shape os{B, frames, bins, 2};
    std::vector<double> xv = x.to_double_vector(), yv(numel(os));
    std::vector<double> re(flen), im(flen);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t j = 0; j < flen; ++j) {
          const double* s = &xv[(b * L + f * step + j) * comp];
          re[j] = s[0] * w[j];
          im[j] = complex ? s[1] * w[j] : 0.0;
        }
        double* dst = &yv[((b * frames + f) * bins) * 2];
        dft_1d(re.data(), im.data(), 1, flen, flen, false, bins, dst, dst + 1, 2);
      }
    ops::ensure_output(out, 0, x.dtype(), os)
        .copy_from(Tensor::from_vector<double>(os, yv).cast(x.dtype()));
  }

 private:
  std::string node_;
  bool onesided_ = true;
};

// Triangular mel filter bank [dft_length/2 + 1, num_mel_bins], following the
// ONNX specification's construction (integer bin edges).
class MelWeightMatrixOp final : public Operator {
 public:
  explicit MelWeightMatrixOp(const OpContext& ctx)
      : node_(ctx.node.describe()), dtype_(output_datatype(ctx)) {
    DEEP500_CHECK(ctx.num_inputs() == 5, node_, ": expected 5 inputs, got ", ctx.num_inputs());
  }
  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    const int64_t mels = scalar_int(in[0], node_ + " num_mel_bins");
    const int64_t dft = scalar_int(in[1], node_ + " dft_length");
    const int64_t rate = scalar_int(in[2], node_ + " sample_rate");
    const double lo = scalar_double(in[3], node_ + " lower_edge_hertz");
    const double hi = scalar_double(in[4], node_ + " upper_edge_hertz");
    DEEP500_CHECK(mels >= 1 && dft >= 1 && rate >= 1 && lo >= 0 && hi > lo, node_,
                  ": invalid arguments (num_mel_bins ", mels, ", dft_length ", dft,
                  ", sample_rate ", rate, ", edges ", lo, "..", hi, ")");
    const int64_t spec_bins = dft / 2 + 1;
    auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double lo_mel = to_mel(lo), hi_mel = to_mel(hi);
    const double step = (hi_mel - lo_mel) / static_cast<double>(mels + 2);
    std::vector<int64_t> edge(mels + 2);
    for (int64_t i = 0; i < mels + 2; ++i) {
      double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + lo_mel) / 2595.0) - 1);
      edge[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / rate));
      DEEP500_CHECK(edge[i] >= 0 && edge[i] < spec_bins, node_,
                    ": upper_edge_hertz beyond the Nyquist frequency");
    }
    std::vector<double> w(spec_bins * mels, 0.0);
    for (int64_t m = 0; m < mels; ++m) {
      const int64_t l = edge[m], c = edge[m + 1], h = edge[m + 2];
      if (c == l) {
        w[c * mels + m] = 1;
      } else {
        for (int64_t j = l; j <= c; ++j)
          w[j * mels + m] = static_cast<double>(j - l) / static_cast<double>(c - l);
      }
      for (int64_t j = c; j < h; ++j)
        w[j * mels + m] = static_cast<double>(h - j) / static_cast<double>(h - c);
    }
    Shape os{spec_bins, mels};
    ops::ensure_output(out, 0, dtype_, os)
        .copy_from(Tensor::from_vector<double>(os, w).cast(dtype_));
  }

 private:
  std::string node_;
  DataType dtype_;
};

}  // namespace

void register_signal(Registry& r) {
  add_kernel<WindowOp<Window::Hann>>(r, "HannWindow");
  add_kernel<WindowOp<Window::Hamming>>(r, "HammingWindow");
  add_kernel<WindowOp<Window::Blackman>>(r, "BlackmanWindow");
  add_kernel<DftOp>(r, "DFT");
  add_kernel<StftOp>(r, "STFT");
  add_kernel<MelWeightMatrixOp>(r, "MelWeightMatrix");
}

}  // namespace deep500::reference
