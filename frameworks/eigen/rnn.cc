// RNN, GRU and LSTM (float32/float64) with their default activations: the
// input projection of every step is one GEMM (X W^T plus the biases), then
// each step is one GEMM with R and vectorized gate arithmetic, instead of the
// reference's per-element double loops. A bidirectional layer runs its two
// directions on two OpenMP threads when the run has two.
//
// sequence_lens: every step still runs on the whole batch; a row whose
// sequence does not cover the step keeps its state and outputs zeros (in
// reverse, a row starts at its own last step, as the reference).
//
// Refused (the reference runs them): other activations, clip, input_forget,
// LSTM peepholes. backward() is delegated to the reference kernel of the
// same node, made on first use, so gradients are the reference's own.
#include <omp.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <type_traits>

#include "frameworks/eigen/common.h"
#include "frameworks/eigen/small_gemm.h"
#include "operators/reference_fallback.h"

namespace deep500::eigen {
namespace {

enum class Cell { Rnn, Gru, Lstm };

int gates_of(Cell c) {
  return c == Cell::Rnn ? 1 : c == Cell::Gru ? 3 : 4;
}

std::vector<std::string> default_activations(Cell c) {
  if (c == Cell::Rnn) return {"tanh"};
  if (c == Cell::Gru) return {"sigmoid", "tanh"};
  return {"sigmoid", "tanh", "tanh"};
}

// 1 / (1 + e^-x), Eigen's (stable where e^-x overflows).
template <class A>
auto sigmoid(const A& x) {
  return x.logistic();
}

// dst (+)= src * m^T, where m is R's rows from `row0` (dst.cols() of them)
// and rt is R^T (row-major, transposed once per call of the layer). A
// single row (batch 1) is a row vector times the matrix, a GEMV over m's
// rows in place: the GEMM path would pack m anew on every step (LSTM
// 64 -> 128, 32 steps: 2.3 -> 0.8 ms). More rows: small_gemm.h over rt's
// columns, read in place; Eigen's GEMM packed R on every step (18% of the
// suite's LSTM at batch 16 in a perf profile).
template <class T, class Dst, class Src, class M>
void product(Dst&& dst, const Src& src, const M& m, const Mat<T>& rt, int64_t row0,
             bool accumulate) {
  if (src.rows() == 1) {
    if (accumulate)
      dst.row(0).noalias() += src.row(0) * m.transpose();
    else
      dst.row(0).noalias() = src.row(0) * m.transpose();
    return;
  }
  small_gemm<T>({src.data(), src.outerStride(), rt.data() + row0, rt.outerStride(), dst.data(),
                 dst.outerStride(), src.rows(), dst.cols(), src.cols()},
                accumulate);
}

class RecurrentOp final : public ops::WithReferenceBackward {
 public:
  RecurrentOp(const OpContext& ctx, Cell cell)
      : WithReferenceBackward(ctx),
        cell_(cell),
        what_(ctx.node.describe()),
        dirs_(ctx.node.attributes.get_string("direction", "forward") == "bidirectional" ? 2 : 1),
        reverse_(ctx.node.attributes.get_string("direction", "forward") == "reverse"),
        layout_(ctx.node.attributes.get_int("layout", 0)),
        linear_before_reset_(ctx.node.attributes.get_int("linear_before_reset", 0) != 0) {}

  static std::string refusal(const OpContext& ctx, Cell cell) {
    if (auto why = float_refusal(ctx, 4); !why.empty()) return why;
    for (size_t i : {size_t{5}, size_t{6}})
      if (ctx.has_input(i) && ctx.inputs[i].dtype != ctx.inputs[0].dtype)
        return cat("input ", i, " is not of X's element type");
    const auto& at = ctx.node.attributes;
    if (ctx.has_input(7)) return "LSTM peepholes (input P) run on the reference backend";
    if (at.has("clip")) return "clip runs on the reference backend";
    if (at.get_int("input_forget", 0) != 0) return "input_forget runs on the reference backend";
    if (at.has("activation_alpha") || at.has("activation_beta"))
      return "activation parameters run on the reference backend";
    auto names = at.get_strings("activations", {});
    const auto defaults = default_activations(cell);
    for (size_t i = 0; i < names.size(); ++i) {
      std::string n = names[i];
      std::transform(n.begin(), n.end(), n.begin(), ::tolower);
      if (n != defaults[i % defaults.size()])
        return cat("activation '", names[i], "' runs on the reference backend");
    }
    const int64_t layout = at.get_int("layout", 0);
    if (layout != 0 && layout != 1) return "layout must be 0 or 1";
    return {};
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    dispatch(
        in[0].dtype(), [&](auto t) { run<decltype(t)>(in, out); }, what_);
  }
  // Constant R: transposed once, not on every call.
  void set_constant_inputs(const std::vector<bool>& c) override { const_r_ = c.size() > 2 && c[2]; }

 private:
  // Each batch row's sequence length (sequence_lens, checked as the
  // reference checks it); empty when every row runs all S steps.
  std::vector<int64_t> sequence_lengths(std::span<const Tensor> in, int64_t S, int64_t B) const {
    const Tensor* lens = ops::optional_input(in, 4);
    if (!lens) return {};
    DEEP500_CHECK(lens->numel() == B, what_, ": sequence_lens must have ", B, " values");
    std::vector<int64_t> v = lens->to_int64_vector();
    bool whole = true;
    for (int64_t l : v) {
      DEEP500_CHECK(l >= 0 && l <= S, what_, ": sequence length ", l, " outside [0, ", S, "]");
      whole = whole && l == S;
    }
    return whole ? std::vector<int64_t>() : v;
  }

  // Sizes, checked against the inputs as the reference checks them.
  struct Dims {
    int64_t S, B, I, H, G;
  };
  Dims dims(std::span<const Tensor> in) const {
    const Tensor &x = in[0], &w = in[1], &r = in[2];
    DEEP500_CHECK(x.rank() == 3 && w.rank() == 3 && r.rank() == 3, what_,
                  ": X, W and R must have rank 3, got ", to_string(x.shape()), ", ",
                  to_string(w.shape()), ", ", to_string(r.shape()));
    Dims d{layout_ == 0 ? x.dim(0) : x.dim(1), layout_ == 0 ? x.dim(1) : x.dim(0), x.dim(2),
           r.dim(2), gates_of(cell_)};
    DEEP500_CHECK(w.shape() == Shape({dirs_, d.G * d.H, d.I}), what_, ": W must have shape ",
                  to_string(Shape{dirs_, d.G * d.H, d.I}), ", got ", to_string(w.shape()));
    DEEP500_CHECK(r.shape() == Shape({dirs_, d.G * d.H, d.H}), what_, ": R must have shape ",
                  to_string(Shape{dirs_, d.G * d.H, d.H}), ", got ", to_string(r.shape()));
    const Shape state{layout_ == 0 ? dirs_ : d.B, layout_ == 0 ? d.B : dirs_, d.H};
    for (size_t i : {size_t{5}, size_t{6}})
      if (const Tensor* s = ops::optional_input(in, i))
        DEEP500_CHECK(s->shape() == state, what_, ": input ", i, " must have shape ",
                      to_string(state), ", got ", to_string(s->shape()));
    if (const Tensor* b = ops::optional_input(in, 3))
      DEEP500_CHECK(b->shape() == Shape({dirs_, 2 * d.G * d.H}), what_, ": B must have shape ",
                    to_string(Shape{dirs_, 2 * d.G * d.H}), ", got ", to_string(b->shape()));
    return d;
  }

  template <class T>
  void run(std::span<const Tensor> in, std::span<Tensor> out) {
    const Dims d = dims(in);
    const std::vector<int64_t> lens = sequence_lengths(in, d.S, d.B);
    const DataType dt = in[0].dtype();
    const Shape y_shape = layout_ == 0 ? Shape{d.S, dirs_, d.B, d.H} : Shape{d.B, d.S, dirs_, d.H};
    const Shape state = layout_ == 0 ? Shape{dirs_, d.B, d.H} : Shape{d.B, dirs_, d.H};
    T* y = out.size() > 0 ? ops::ensure_output(out, 0, dt, y_shape).template data<T>() : nullptr;
    T* yh = out.size() > 1 ? ops::ensure_output(out, 1, dt, state).template data<T>() : nullptr;
    T* yc = out.size() > 2 && cell_ == Cell::Lstm
                ? ops::ensure_output(out, 2, dt, state).template data<T>()
                : nullptr;
    // The two directions of a bidirectional layer share only their inputs and
    // write disjoint outputs: one thread each where the run has two.
    std::exception_ptr failed[2];
#pragma omp parallel for num_threads(2) if (dirs_ == 2 && omp_get_max_threads() > 1)
    for (int64_t dir = 0; dir < dirs_; ++dir) {
      try {
        run_direction<T>(in, d, lens, dir, y, yh, yc);
      } catch (...) {
        failed[dir] = std::current_exception();
      }
    }
    for (const auto& e : failed)
      if (e) std::rethrow_exception(e);
  }

  // Offset of (t, b) rows in X and of (t, dir, b) / (dir, b) in the outputs.
  int64_t x_row(const Dims& d, int64_t t, int64_t b) const {
    return layout_ == 0 ? t * d.B + b : b * d.S + t;
  }
  int64_t y_at(const Dims& d, int64_t t, int64_t dir, int64_t b) const {
    return (layout_ == 0 ? (t * dirs_ + dir) * d.B + b : (b * d.S + t) * dirs_ + dir) * d.H;
  }
  int64_t state_at(const Dims& d, int64_t dir, int64_t b) const {
    return (layout_ == 0 ? dir * d.B + b : b * dirs_ + dir) * d.H;
  }

  template <class T>
  void run_direction(std::span<const Tensor> in, const Dims& d, const std::vector<int64_t>& lens,
                     int64_t dir, T* y, T* yh, T* yc) {
    const int64_t GH = d.G * d.H, H = d.H;
    const CMatMap<T> x(in[0].data<T>(), d.S * d.B, d.I);
    const CMatMap<T> w(in[1].data<T>() + dir * GH * d.I, GH, d.I);
    const CMatMap<T> r(in[2].data<T>() + dir * GH * H, GH, H);
    Buffers<T>& buf = buffers<T>(dir);
    Mat<T>& rt = buf.rt;
    if (d.B > 1 && !(const_r_ && buf.rt_for == r.data() && rt.rows() == H)) {
      rt = r.transpose();
      buf.rt_for = const_r_ ? r.data() : nullptr;
    }
    Eigen::Matrix<T, 1, Eigen::Dynamic> wb = Eigen::Matrix<T, 1, Eigen::Dynamic>::Zero(GH), rb = wb;
    if (const Tensor* b = ops::optional_input(in, 3)) {
      wb = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(b->data<T>() + dir * 2 * GH, GH);
      rb = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(b->data<T>() + dir * 2 * GH + GH,
                                                                 GH);
    }
    // Every step's input projection with the biases that add to it (the
    // product accumulates onto the biases: no zeroing pass, no bias pass).
    Eigen::Matrix<T, 1, Eigen::Dynamic> input_bias = wb;
    const bool gru_lbr = cell_ == Cell::Gru && linear_before_reset_;
    if (gru_lbr)
      input_bias.head(2 * H) += rb.head(2 * H);
    else
      input_bias += rb;
    Mat<T>& xw = buf.xw;
    xw.resize(d.S * d.B, GH);
    xw.rowwise() = input_bias;
    xw.noalias() += x * w.transpose();

    Mat<T> h = Mat<T>::Zero(d.B, H), c = Mat<T>::Zero(d.B, H);
    load_state(in, 5, d, dir, h);
    if (cell_ == Cell::Lstm) load_state(in, 6, d, dir, c);
    Mat<T> hr(d.B, GH);
    const bool backwards = dirs_ == 2 ? dir == 1 : reverse_;
    // Step t's rows of xw, equally spaced in either layout; the step adds
    // the recurrent product onto them in place.
    const Eigen::OuterStride<> between_batches((x_row(d, 0, 1) - x_row(d, 0, 0)) * GH);
    Mat<T> held_h, held_c;  // rows outside their sequence at this step
    std::vector<int64_t> idle;
    for (int64_t k = 0; k < d.S; ++k) {
      const int64_t t = backwards ? d.S - 1 - k : k;
      Eigen::Map<Mat<T>, 0, Eigen::OuterStride<>> g(xw.data() + x_row(d, t, 0) * GH, d.B, GH,
                                                    between_batches);
      idle.clear();
      for (int64_t b = 0; b < static_cast<int64_t>(lens.size()); ++b)
        if (t >= lens[b]) idle.push_back(b);
      hold_rows(idle, h, c, held_h, held_c, true);
      step<T>(g, hr, r, rt, rb, h, c, H);
      hold_rows(idle, h, c, held_h, held_c, false);
      if (y)
        for (int64_t b = 0; b < d.B; ++b) {
          Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>> row(y + y_at(d, t, dir, b), H);
          if (t < (lens.empty() ? d.S : lens[b]))
            row = h.row(b);
          else
            row.setZero();
        }
    }
    for (int64_t b = 0; b < d.B; ++b) {
      if (yh)
        Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(yh + state_at(d, dir, b), H) = h.row(b);
      if (yc)
        Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(yc + state_at(d, dir, b), H) = c.row(b);
    }
  }

  // Saves (`save`) or restores the state rows in `rows`, so a step leaves
  // them as they were.
  template <class T>
  void hold_rows(const std::vector<int64_t>& rows, Mat<T>& h, Mat<T>& c, Mat<T>& held_h,
                 Mat<T>& held_c, bool save) const {
    if (rows.empty()) return;
    if (save) {
      held_h.resize(static_cast<Eigen::Index>(rows.size()), h.cols());
      held_c.resize(static_cast<Eigen::Index>(rows.size()), c.cols());
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto row = static_cast<Eigen::Index>(i);
      if (save) {
        held_h.row(row) = h.row(rows[i]);
        held_c.row(row) = c.row(rows[i]);
      } else {
        h.row(rows[i]) = held_h.row(row);
        c.row(rows[i]) = held_c.row(row);
      }
    }
  }

  template <class T>
  void load_state(std::span<const Tensor> in, size_t i, const Dims& d, int64_t dir, Mat<T>& s) {
    const Tensor* t = ops::optional_input(in, i);
    if (!t) return;
    for (int64_t b = 0; b < d.B; ++b)
      s.row(b) = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(
          t->data<T>() + state_at(d, dir, b), d.H);
  }

  // One step: `g` holds this step's input projection plus biases (ONNX gate
  // order: LSTM i, o, f, c; GRU z, r, h); updates h (and c).
  template <class T>
  void step(Eigen::Ref<Mat<T>> g, Mat<T>& hr, const CMatMap<T>& r, const Mat<T>& rt,
            const Eigen::Matrix<T, 1, Eigen::Dynamic>& rb, Mat<T>& h, Mat<T>& c, int64_t H) const {
    if (cell_ == Cell::Rnn) {
      product<T>(g, h, r, rt, 0, true);
      h = g.array().tanh().matrix();
      return;
    }
    if (cell_ == Cell::Lstm) {
      product<T>(g, h, r, rt, 0, true);
      // In place, without temporaries: i, o, f (adjacent) through the
      // sigmoid in one pass, the candidate through tanh.
      auto a = g.array();
      a.leftCols(3 * H) = sigmoid(a.leftCols(3 * H));
      a.rightCols(H) = a.rightCols(H).tanh();
      c.array() = a.middleCols(2 * H, H) * c.array() + a.leftCols(H) * a.rightCols(H);
      h.array() = a.middleCols(H, H) * c.array().tanh();
      return;
    }
    // GRU: z and r from h R_zr^T; the candidate with r applied after
    // (linear_before_reset: all three from one product with h) or before the
    // recurrent product.
    if (linear_before_reset_)
      product<T>(hr, h, r, rt, 0, false);
    else
      product<T>(hr.leftCols(2 * H), h, r.topRows(2 * H), rt, 0, false);
    const Arr2<T> z_in = g.array().leftCols(H) + hr.array().leftCols(H);
    const Arr2<T> z = sigmoid(z_in);
    const Arr2<T> keep_new = sigmoid(-z_in);  // 1 - z without cancellation where z ~ 1
    const Arr2<T> rg = sigmoid(g.array().middleCols(H, H) + hr.array().middleCols(H, H));
    Arr2<T> cand;
    if (linear_before_reset_) {
      hr.rightCols(H).rowwise() += rb.tail(H);
      cand = (g.array().rightCols(H) + rg * hr.array().rightCols(H)).tanh();
    } else {
      const Mat<T> gated = (rg * h.array()).matrix();
      product<T>(hr.rightCols(H), gated, r.bottomRows(H), rt, 2 * H, false);
      cand = (g.array().rightCols(H) + hr.array().rightCols(H)).tanh();
    }
    h = (keep_new * cand + z * h.array()).matrix();
  }

  Cell cell_;
  std::string what_;
  int64_t dirs_;
  bool reverse_;
  int64_t layout_;
  bool linear_before_reset_;
  bool const_r_ = false;

  // Per direction, kept between calls (same sizes: no allocation, no page
  // faults): every step's input projection, R transposed (kept across calls
  // while R is a constant at the same address).
  template <class T>
  struct Buffers {
    Mat<T> xw, rt;
    const void* rt_for = nullptr;  // the constant R that rt holds transposed
  };
  Buffers<float> float_buffers_[2];
  Buffers<double> double_buffers_[2];
  template <class T>
  Buffers<T>& buffers(int64_t dir) {
    if constexpr (std::is_same_v<T, float>)
      return float_buffers_[dir];
    else
      return double_buffers_[dir];
  }
};

}  // namespace

void register_rnn(Registry& r) {
  const std::pair<const char*, Cell> kinds[] = {
      {"RNN", Cell::Rnn}, {"GRU", Cell::Gru}, {"LSTM", Cell::Lstm}};
  for (const auto& kind : kinds) {
    const Cell cell = kind.second;
    r.add({"", kind.first, 1, INT_MAX, "eigen", cat("eigen:", kind.first),
           [cell](const OpContext& ctx) -> Expected<std::unique_ptr<Operator>> {
             if (auto why = RecurrentOp::refusal(ctx, cell); !why.empty()) return refuse(why);
             return ops::make_operator<RecurrentOp>(ctx, cell);
           }});
  }
}

}  // namespace deep500::eigen
