// FLOP formulas of the cost model that need more than element counts (the
// table in cost_model.h says what each counts).
#include <cctype>
#include <map>
#include <string>

#include "operators/cost_formulas.h"

namespace deep500::ops::cost_detail {
namespace {

double product(const std::vector<int64_t>& v) {
  double p = 1;
  for (int64_t x : v) p *= static_cast<double>(x);
  return p;
}

}  // namespace

double bytes_of(const TensorDesc& d) {
  if (d.dtype == DataType::Undefined || d.dtype == DataType::String) return 0;
  return static_cast<double>(numel(d.shape)) * static_cast<double>(size_of(d.dtype));
}

double conv_flops(const Io& io, size_t w, int b) {
  if (!io.has(w) || io.in[w].shape.empty() || io.in[w].shape[0] <= 0) return 0;
  const Shape& ws = io.in[w].shape;
  const double y = io.numel_out();
  const double per_output = static_cast<double>(numel(ws)) / static_cast<double>(ws[0]);
  return 2 * y * per_output + (b >= 0 && io.has(static_cast<size_t>(b)) ? y : 0);
}

double conv_transpose_flops(const Io& io) {
  if (!io.has(1) || io.in[1].shape.empty() || io.in[1].shape[0] <= 0) return 0;
  const Shape& ws = io.in[1].shape;
  const double per_input = static_cast<double>(numel(ws)) / static_cast<double>(ws[0]);
  return 2 * io.numel_in(0) * per_input + (io.has(2) ? io.numel_out() : 0);
}

double gemm_flops(const Io& io) {
  if (!io.has(1) || io.in[0].shape.size() != 2 || io.in[1].shape.size() != 2) return 0;
  const Attributes& at = io.node.attributes;
  const bool ta = at.get_int("transA", 0) != 0, tb = at.get_int("transB", 0) != 0;
  const Shape &a = io.in[0].shape, &b = io.in[1].shape;
  const double m = static_cast<double>(ta ? a[1] : a[0]);
  const double k = static_cast<double>(ta ? a[0] : a[1]);
  const double n = static_cast<double>(tb ? b[0] : b[1]);
  const float alpha = at.get_float("alpha", 1.f), beta = at.get_float("beta", 1.f);
  double flops = 2 * m * n * k + (alpha != 1.f ? m * n : 0);
  if (io.has(2) && beta != 0.f) flops += m * n + (beta != 1.f ? m * n : 0);
  return flops;
}

double matmul_flops(const Io& io, size_t a) {
  if (!io.has(a) || io.in[a].shape.empty()) return 0;
  return 2 * static_cast<double>(io.in[a].shape.back()) * io.numel_out();
}

double pool_flops(const Io& io) {
  return io.numel_out() * product(io.node.attributes.get_ints("kernel_shape", {}));
}

double recurrent_flops(const Io& io) {
  if (!io.has(2) || io.in[0].shape.size() != 3 || io.in[2].shape.size() != 3) return 0;
  const Shape &x = io.in[0].shape, &r = io.in[2].shape;  // R: [D, G*H, H]
  const double steps_batch = static_cast<double>(x[0]) * static_cast<double>(x[1]);
  return 2 * steps_batch * static_cast<double>(r[0] * r[1]) * static_cast<double>(x[2] + r[2]);
}

double einsum_flops(const Io& io) {
  std::string lhs;
  for (char c : io.node.attributes.get_string("equation", "")) {
    if (c == '-') break;  // "->"
    if (c != ' ') lhs += c;
  }
  std::map<char, int64_t> size;
  size_t term = 0, dim = 0;
  for (char c : lhs) {
    if (c == ',') {
      ++term, dim = 0;
    } else if (std::isalpha(static_cast<unsigned char>(c)) && io.has(term) &&
               dim < io.in[term].shape.size()) {
      size[c] = std::max(size[c], io.in[term].shape[dim++]);
    }
  }
  double total = 1;
  for (const auto& [letter, n] : size) total *= static_cast<double>(n);
  return total * static_cast<double>(io.in.size());
}

double dft_flops(const Io& io) {
  const auto rank = static_cast<int64_t>(io.in.empty() ? 0 : io.in[0].shape.size());
  int64_t axis = io.node.attributes.get_int("axis", 1);
  if (axis < 0) axis += rank;
  if (rank < 2 || axis < 0 || axis >= rank) return 0;
  return 8 * io.numel_in(0) * static_cast<double>(io.in[0].shape[static_cast<size_t>(axis)]);
}

double grid_sample_flops(const Io& io) {
  if (!io.has(1) || io.in[0].shape.size() != 4 || io.in[1].shape.size() != 4) return 0;
  const Shape &x = io.in[0].shape, &g = io.in[1].shape;
  const double outputs = static_cast<double>(x[0] * x[1]) * static_cast<double>(g[1] * g[2]);
  const std::string mode = io.node.attributes.get_string("mode", "bilinear");
  const double taps = mode == "bicubic" || mode == "cubic" ? 16 : mode == "nearest" ? 1 : 4;
  return 2 * outputs * taps;
}

double roi_align_flops(const Io& io) {
  if (!io.has(1) || io.in[0].shape.size() != 4 || io.in[1].shape.size() != 2) return 0;
  const Attributes& at = io.node.attributes;
  const double outputs = static_cast<double>(io.in[1].shape[0] * io.in[0].shape[1]) *
                         static_cast<double>(at.get_int("output_height", 1)) *
                         static_cast<double>(at.get_int("output_width", 1));
  const int64_t ratio = at.get_int("sampling_ratio", 0);
  // Adaptive sampling depends on the boxes' values: counted as 2x2.
  const double samples = ratio > 0 ? static_cast<double>(ratio * ratio) : 4.0;
  return 8 * outputs * samples;
}

}  // namespace deep500::ops::cost_detail
