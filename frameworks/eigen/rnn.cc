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
// LSTM peepholes. backward() runs the forward again keeping every step's
// gates, then backpropagates through time on the same vectorized path
// (rnn_backward.cc).
#include <omp.h>

#include <algorithm>
#include <exception>
#include <type_traits>

#include "frameworks/eigen/common.h"
#include "frameworks/eigen/rnn_layer.h"
#include "frameworks/eigen/small_gemm.h"

namespace deep500::eigen {
namespace {

using rnn::Cell;
using rnn::gates_of;
using rnn::Layer;
using rnn::Trace;

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

class RecurrentOp final : public Operator {
 public:
  RecurrentOp(const OpContext& ctx, Cell cell)
      : cell_(cell),
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

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, true);
    if (n > 4) d[4] = false;  // sequence_lens
    return d;
  }
  // Backpropagation through time (rnn_backward.cc): each direction's
  // forward again, keeping its steps' values, then its steps in reverse.
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override {
    dispatch(
        in[0].dtype(), [&](auto t) { backprop<decltype(t)>(gy, in, gx); }, what_);
  }

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

  // The call's geometry, sizes checked against the inputs as the reference
  // checks them.
  Layer layer(std::span<const Tensor> in) const {
    const Tensor &x = in[0], &w = in[1], &r = in[2];
    DEEP500_CHECK(x.rank() == 3 && w.rank() == 3 && r.rank() == 3, what_,
                  ": X, W and R must have rank 3, got ", to_string(x.shape()), ", ",
                  to_string(w.shape()), ", ", to_string(r.shape()));
    Layer d{cell_,
            linear_before_reset_,
            dirs_,
            layout_,
            reverse_,
            layout_ == 0 ? x.dim(0) : x.dim(1),
            layout_ == 0 ? x.dim(1) : x.dim(0),
            x.dim(2),
            r.dim(2),
            gates_of(cell_),
            {}};
    DEEP500_CHECK(w.shape() == Shape({dirs_, d.G * d.H, d.I}), what_, ": W must have shape ",
                  to_string(Shape{dirs_, d.G * d.H, d.I}), ", got ", to_string(w.shape()));
    DEEP500_CHECK(r.shape() == Shape({dirs_, d.G * d.H, d.H}), what_, ": R must have shape ",
                  to_string(Shape{dirs_, d.G * d.H, d.H}), ", got ", to_string(r.shape()));
    for (size_t i : {size_t{5}, size_t{6}})
      if (const Tensor* s = ops::optional_input(in, i))
        DEEP500_CHECK(s->shape() == state_shape(d), what_, ": input ", i, " must have shape ",
                      to_string(state_shape(d)), ", got ", to_string(s->shape()));
    if (const Tensor* b = ops::optional_input(in, 3))
      DEEP500_CHECK(b->shape() == Shape({dirs_, 2 * d.G * d.H}), what_, ": B must have shape ",
                    to_string(Shape{dirs_, 2 * d.G * d.H}), ", got ", to_string(b->shape()));
    d.lens = sequence_lengths(in, d.S, d.B);
    return d;
  }
  Shape state_shape(const Layer& d) const {
    return layout_ == 0 ? Shape{dirs_, d.B, d.H} : Shape{d.B, dirs_, d.H};
  }

  // Calls f(dir) for each direction: the two directions of a bidirectional
  // layer share only their inputs and write disjoint outputs, one thread
  // each where the run has two.
  template <class F>
  void each_direction(F&& f) const {
    std::exception_ptr failed[2];
#pragma omp parallel for num_threads(2) if (dirs_ == 2 && omp_get_max_threads() > 1)
    for (int64_t dir = 0; dir < dirs_; ++dir) {
      try {
        f(dir);
      } catch (...) {
        failed[dir] = std::current_exception();
      }
    }
    for (const auto& e : failed)
      if (e) std::rethrow_exception(e);
  }

  template <class T>
  void run(std::span<const Tensor> in, std::span<Tensor> out) {
    const Layer d = layer(in);
    const DataType dt = in[0].dtype();
    const Shape y_shape = layout_ == 0 ? Shape{d.S, dirs_, d.B, d.H} : Shape{d.B, d.S, dirs_, d.H};
    T* y = out.size() > 0 ? ops::ensure_output(out, 0, dt, y_shape).template data<T>() : nullptr;
    T* yh = out.size() > 1 ? ops::ensure_output(out, 1, dt, state_shape(d)).template data<T>()
                           : nullptr;
    T* yc = out.size() > 2 && cell_ == Cell::Lstm
                ? ops::ensure_output(out, 2, dt, state_shape(d)).template data<T>()
                : nullptr;
    each_direction([&](int64_t dir) { run_direction<T>(in, d, dir, y, yh, yc, nullptr); });
  }

  template <class T>
  void backprop(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<Tensor> gx) {
    const Layer d = layer(in);
    const int64_t GH = d.G * d.H;
    auto grad_of = [&](size_t i) -> T* {  // input i's gradient, null where none is asked
      if (i >= gx.size() || !ops::optional_input(in, i)) return nullptr;
      return ops::ensure_output(gx, i, in[i].dtype(), in[i].shape()).template data<T>();
    };
    auto given = [&](size_t i) -> const T* {  // output i's gradient, null where absent
      return i < gy.size() && gy[i].defined() ? gy[i].template data<T>() : nullptr;
    };
    T *dx = grad_of(0), *dw = grad_of(1), *dr = grad_of(2), *db = grad_of(3), *dh0 = grad_of(5),
      *dc0 = cell_ == Cell::Lstm ? grad_of(6) : nullptr;
    // Where nobody asks for a gradient it still lands somewhere: X's in
    // unused_dx, W's and R's (both) in a direction's part of `unused`, B's in
    // a direction's unused_db. X's from dir 1 is added after.
    Mat<T> unused_dx, second_dx;
    const int64_t per_dir = GH * std::max(d.I, d.H);
    std::vector<T> unused(static_cast<size_t>(dirs_ * per_dir));
    if (!dx) unused_dx.resize(d.S * d.B, d.I), dx = unused_dx.data();
    if (dirs_ == 2) second_dx.resize(d.S * d.B, d.I);
    each_direction([&](int64_t dir) {
      // Gradients decaying through many steps reach subnormal values (10% of
      // a 399-step GRU's, 12x its backward's time): zero instead.
      const FlushSubnormals flush;
      Trace<T>& trace = buffers<T>(dir).trace;
      trace.resize(d);
      run_direction<T>(in, d, dir, nullptr, nullptr, nullptr, &trace);
      T* own = unused.data() + dir * per_dir;
      std::vector<T> unused_db;
      if (!db) unused_db.resize(static_cast<size_t>(2 * GH));
      rnn::backward_direction<T>(d, dir, trace,
                                 {given(0), given(1), cell_ == Cell::Lstm ? given(2) : nullptr,
                                  CMatMap<T>(in[0].data<T>(), d.S * d.B, d.I),
                                  CMatMap<T>(in[1].data<T>() + dir * GH * d.I, GH, d.I),
                                  CMatMap<T>(in[2].data<T>() + dir * GH * d.H, GH, d.H),
                                  MatMap<T>(dir == 0 ? dx : second_dx.data(), d.S * d.B, d.I),
                                  dw ? dw + dir * GH * d.I : own, dr ? dr + dir * GH * d.H : own,
                                  db ? db + dir * 2 * GH : unused_db.data(), dh0, dc0});
    });
    if (dirs_ == 2) MatMap<T>(dx, d.S * d.B, d.I) += second_dx;
  }

  template <class T>
  void run_direction(std::span<const Tensor> in, const Layer& d, int64_t dir, T* y, T* yh, T* yc,
                     Trace<T>* trace) {
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
    Mat<T> held_h, held_c;  // rows outside their sequence at this step
    std::vector<int64_t> idle;
    for (int64_t k = 0; k < d.S; ++k) {
      const int64_t t = d.backwards(dir) ? d.S - 1 - k : k;
      // Step t's rows of xw; the step adds the recurrent product onto them
      // in place.
      auto g = d.rows_at(xw, t);
      idle.clear();
      for (int64_t b = 0; b < d.B; ++b)
        if (!d.active(t, b)) idle.push_back(b);
      hold_rows(idle, h, c, held_h, held_c, true);
      if (trace) {
        d.rows_at(trace->h_prev, t) = h;
        if (cell_ == Cell::Lstm) d.rows_at(trace->c_prev, t) = c;
      }
      if (trace && cell_ == Cell::Gru) {
        rnn::Rows<T> gates = d.rows_at(trace->gates, t), u = d.rows_at(trace->u, t);
        step<T>(g, hr, r, rt, rb, h, c, H, &gates, &u);
      } else {
        step<T>(g, hr, r, rt, rb, h, c, H, nullptr, nullptr);
      }
      if (trace) record(d, t, g, h, c, *trace);
      hold_rows(idle, h, c, held_h, held_c, false);
      if (y)
        for (int64_t b = 0; b < d.B; ++b) {
          Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>> row(y + d.y_at(t, dir, b), H);
          if (d.active(t, b))
            row = h.row(b);
          else
            row.setZero();
        }
    }
    for (int64_t b = 0; b < d.B; ++b) {
      if (yh)
        Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(yh + d.state_at(dir, b), H) = h.row(b);
      if (yc)
        Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(yc + d.state_at(dir, b), H) = c.row(b);
    }
  }

  // After step t: its gates (RNN: the new state; LSTM: g, which the step
  // left holding them; GRU: step() wrote them) and the new cell state.
  template <class T, class G>
  void record(const Layer& d, int64_t t, const G& g, const Mat<T>& h, const Mat<T>& c,
              Trace<T>& trace) const {
    if (cell_ == Cell::Rnn) d.rows_at(trace.gates, t) = h;
    if (cell_ == Cell::Lstm) {
      d.rows_at(trace.gates, t) = g;
      d.rows_at(trace.c_new, t) = c;
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
  void load_state(std::span<const Tensor> in, size_t i, const Layer& d, int64_t dir, Mat<T>& s) {
    const Tensor* t = ops::optional_input(in, i);
    if (!t) return;
    for (int64_t b = 0; b < d.B; ++b)
      s.row(b) = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(
          t->data<T>() + d.state_at(dir, b), d.H);
  }

  // One step: `g` holds this step's input projection plus biases (ONNX gate
  // order: LSTM i, o, f, c; GRU z, r, h); updates h (and c). A GRU step
  // writes its gates and the hidden gate's recurrent input to `gru_trace`
  // when given.
  template <class T>
  void step(Eigen::Ref<Mat<T>> g, Mat<T>& hr, const CMatMap<T>& r, const Mat<T>& rt,
            const Eigen::Matrix<T, 1, Eigen::Dynamic>& rb, Mat<T>& h, Mat<T>& c, int64_t H,
            rnn::Rows<T>* gru_gates, rnn::Rows<T>* gru_u) const {
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
      if (gru_u) *gru_u = hr.rightCols(H);
    } else {
      const Mat<T> gated = (rg * h.array()).matrix();
      product<T>(hr.rightCols(H), gated, r.bottomRows(H), rt, 2 * H, false);
      cand = (g.array().rightCols(H) + hr.array().rightCols(H)).tanh();
      if (gru_u) *gru_u = gated;
    }
    if (gru_gates) {
      gru_gates->leftCols(H) = z.matrix();
      gru_gates->middleCols(H, H) = rg.matrix();
      gru_gates->rightCols(H) = cand.matrix();
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
    Trace<T> trace;                // backward's
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
