// Recurrent layers: RNN, GRU, LSTM (forward and backpropagation through time).
//
// All three share one driver: inputs are converted to double in a canonical
// layout (X [seq][batch][input], states [dir][batch][hidden]), each batch row
// runs its own sequence length, and results are converted back. Backward
// re-runs the forward pass keeping per-step gate values, then walks the steps
// in reverse. Activation lists, clip, layout, directions, sequence_lens,
// peepholes, input_forget and linear_before_reset are honoured in both passes.
#include <algorithm>
#include <cmath>

#include "frameworks/reference/kernels/common.h"
#include "frameworks/reference/kernels/families.h"
#include "frameworks/reference/kernels/rnn_cells.h"

namespace deep500::reference {
namespace {

enum class CellKind { Rnn, Gru, Lstm };

using rnn::Activation;
using rnn::parse_activations;

// Per-step values kept for backward.
struct Step {
  std::vector<double> h_prev, c_prev, a, g, c_new, u;
};

class RecurrentOp final : public Operator {
 public:
  RecurrentOp(const OpContext& ctx, CellKind kind) : kind_(kind), node_(ctx.node.describe()) {
    const auto& at = ctx.node.attributes;
    gates_ = kind == CellKind::Rnn ? 1 : kind == CellKind::Gru ? 3 : 4;
    DEEP500_CHECK(ctx.num_inputs() >= 3, node_, ": expected at least 3 inputs (X, W, R), got ",
                  ctx.num_inputs());
    for (size_t i = 0; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i) && i != 4)
        DEEP500_CHECK(ctx.inputs[i].dtype == ctx.inputs[0].dtype, node_, ": input #", i,
                      " must have the element type of X (", name_of(ctx.inputs[0].dtype), ")");
    dispatch_float(
        ctx.inputs[0].dtype, [](auto) {}, node_ + ": X");
    std::string dir = at.get_string("direction", "forward");
    DEEP500_CHECK(dir == "forward" || dir == "reverse" || dir == "bidirectional", node_,
                  ": direction must be forward, reverse or bidirectional, got '", dir, "'");
    dirs_ = dir == "bidirectional" ? 2 : 1;
    reverse_first_ = dir == "reverse";
    layout_ = at.get_int("layout", 0);
    DEEP500_CHECK(layout_ == 0 || layout_ == 1, node_, ": layout must be 0 or 1");
    clip_ = at.has("clip") ? at.get_float("clip") : 0.0;
    input_forget_ = at.get_int("input_forget", 0) != 0;
    linear_before_reset_ = at.get_int("linear_before_reset", 0) != 0;
    hidden_attr_ = at.get_int("hidden_size", -1);
    if (kind == CellKind::Rnn) acts_ = parse_activations(ctx.node, 1, dirs_, {"Tanh"});
    if (kind == CellKind::Gru) acts_ = parse_activations(ctx.node, 2, dirs_, {"Sigmoid", "Tanh"});
    if (kind == CellKind::Lstm)
      acts_ = parse_activations(ctx.node, 3, dirs_, {"Sigmoid", "Tanh", "Tanh"});
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    Problem p = load(in);
    std::vector<double> y(p.S * dirs_ * p.B * p.H, 0.0), yh(dirs_ * p.B * p.H), yc(yh.size());
    run(p, y, yh, yc, nullptr);
    DataType dt = in[0].dtype();
    auto put = [&](size_t i, const Shape& s, const std::vector<double>& v) {
      if (i >= out.size()) return;
      ops::ensure_output(out, i, dt, s).copy_from(Tensor::from_vector<double>(s, v).cast(dt));
    };
    if (layout_ == 0) {
      put(0, {p.S, dirs_, p.B, p.H}, y);
      put(1, {dirs_, p.B, p.H}, yh);
      if (kind_ == CellKind::Lstm) put(2, {dirs_, p.B, p.H}, yc);
    } else {
      put(0, {p.B, p.S, dirs_, p.H}, permute(y, {p.S, dirs_, p.B, p.H}, {2, 0, 1, 3}));
      put(1, {p.B, dirs_, p.H}, permute(yh, {dirs_, p.B, p.H}, {1, 0, 2}));
      if (kind_ == CellKind::Lstm)
        put(2, {p.B, dirs_, p.H}, permute(yc, {dirs_, p.B, p.H}, {1, 0, 2}));
    }
  }

  bool has_backward() const override { return true; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, true);
    if (n > 4) d[4] = false;  // sequence_lens
    return d;
  }

  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor>,
                std::span<Tensor> gx) override;

 private:
  struct Problem {
    int64_t S = 0, B = 0, I = 0, H = 0;
    std::vector<double> X, W, R, Bias, P, h0, c0;
    std::vector<int64_t> lens;
  };

  // Reorders a row-major tensor of `shape` so that output dim k is input dim perm[k].
  static std::vector<double> permute(const std::vector<double>& v, const Shape& shape,
                                     const std::vector<int>& perm) {
    Shape out_shape(shape.size());
    for (size_t k = 0; k < perm.size(); ++k) out_shape[k] = shape[perm[k]];
    Shape in_strides = contiguous_strides(shape), strides(shape.size());
    for (size_t k = 0; k < perm.size(); ++k) strides[k] = in_strides[perm[k]];
    std::vector<double> out(v.size());
    MultiIndex it(out_shape, {strides});
    for (size_t i = 0; !it.done(); it.next(), ++i) out[i] = v[it.offset(0)];
    return out;
  }

  Problem load(std::span<const Tensor> in) const {
    Problem p;
    const Tensor &x = in[0], &w = in[1], &r = in[2];
    DEEP500_CHECK(x.rank() == 3 && w.rank() == 3 && r.rank() == 3, node_,
                  ": X, W and R must have rank 3, got ", to_string(x.shape()), ", ",
                  to_string(w.shape()), ", ", to_string(r.shape()));
    p.S = layout_ == 0 ? x.dim(0) : x.dim(1);
    p.B = layout_ == 0 ? x.dim(1) : x.dim(0);
    p.I = x.dim(2);
    p.H = r.dim(2);
    const int64_t G = gates_, H = p.H;
    DEEP500_CHECK(hidden_attr_ < 0 || hidden_attr_ == H, node_, ": hidden_size ", hidden_attr_,
                  " does not match R ", to_string(r.shape()));
    DEEP500_CHECK(w.shape() == Shape({dirs_, G * H, p.I}), node_, ": W must have shape ",
                  to_string(Shape{dirs_, G * H, p.I}), ", got ", to_string(w.shape()));
    DEEP500_CHECK(r.shape() == Shape({dirs_, G * H, H}), node_, ": R must have shape ",
                  to_string(Shape{dirs_, G * H, H}), ", got ", to_string(r.shape()));
    p.X = x.to_double_vector();
    if (layout_ == 1) p.X = permute(p.X, x.shape(), {1, 0, 2});
    p.W = w.to_double_vector();
    p.R = r.to_double_vector();
    p.Bias.assign(dirs_ * 2 * G * H, 0.0);
    if (auto* b = ops::optional_input(in, 3)) {
      DEEP500_CHECK(b->shape() == Shape({dirs_, 2 * G * H}), node_, ": B must have shape ",
                    to_string(Shape{dirs_, 2 * G * H}), ", got ", to_string(b->shape()));
      p.Bias = b->to_double_vector();
    }
    p.lens.assign(p.B, p.S);
    if (auto* s = ops::optional_input(in, 4)) {
      DEEP500_CHECK(s->numel() == p.B, node_, ": sequence_lens must have ", p.B, " values");
      p.lens = s->to_int64_vector();
      for (auto l : p.lens)
        DEEP500_CHECK(l >= 0 && l <= p.S, node_, ": sequence length ", l, " outside [0, ", p.S,
                      "]");
    }
    Shape state = layout_ == 0 ? Shape{dirs_, p.B, H} : Shape{p.B, dirs_, H};
    auto load_state = [&](size_t i, const char* what) {
      std::vector<double> v(dirs_ * p.B * H, 0.0);
      if (auto* t = ops::optional_input(in, i)) {
        DEEP500_CHECK(t->shape() == state, node_, ": ", what, " must have shape ", to_string(state),
                      ", got ", to_string(t->shape()));
        v = t->to_double_vector();
        if (layout_ == 1) v = permute(v, state, {1, 0, 2});
      }
      return v;
    };
    p.h0 = load_state(5, "initial_h");
    p.c0 = load_state(6, "initial_c");
    p.P.assign(dirs_ * 3 * H, 0.0);
    if (kind_ == CellKind::Lstm)
      if (auto* t = ops::optional_input(in, 7)) {
        DEEP500_CHECK(t->shape() == Shape({dirs_, 3 * H}), node_, ": P must have shape ",
                      to_string(Shape{dirs_, 3 * H}), ", got ", to_string(t->shape()));
        p.P = t->to_double_vector();
      }
    return p;
  }

  bool reversed(int d) const { return d == 1 || reverse_first_; }
  const Activation& act(int d, int k) const { return acts_[d * acts_.size() / dirs_ + k]; }
  double clip(double a) const { return clip_ > 0 ? std::clamp(a, -clip_, clip_) : a; }
  double clip_grad(double a) const { return clip_ > 0 && std::abs(a) > clip_ ? 0.0 : 1.0; }

  // One time step for direction d: h, c -> h_out, c_out; fills st.
  void cell(const Problem& p, int d, const double* x, const double* h, const double* c,
            double* h_out, double* c_out, Step& st) const {
    const int64_t G = gates_, H = p.H, I = p.I;
    const double* W = &p.W[d * G * H * I];
    const double* R = &p.R[d * G * H * H];
    const double* wb = &p.Bias[d * 2 * G * H];
    const double* rb = wb + G * H;
    st.h_prev.assign(h, h + H);
    st.c_prev.assign(c, c + H);
    st.a.assign(G * H, 0.0);
    st.g.assign(G * H, 0.0);
    st.u.assign(H, 0.0);
    // Input part for all gates; recurrent part for all but GRU's hidden gate.
    for (int64_t j = 0; j < G * H; ++j) {
      double s = wb[j];
      for (int64_t k = 0; k < I; ++k) s += W[j * I + k] * x[k];
      bool gru_h = kind_ == CellKind::Gru && j >= 2 * H;
      if (!gru_h) {
        s += rb[j];
        for (int64_t k = 0; k < H; ++k) s += R[j * H + k] * h[k];
      }
      st.a[j] = s;
    }
    if (kind_ == CellKind::Rnn) {
      for (int64_t j = 0; j < H; ++j) h_out[j] = st.g[j] = act(d, 0).f(clip(st.a[j]));
      return;
    }
    if (kind_ == CellKind::Gru) {
      for (int64_t j = 0; j < 2 * H; ++j) st.g[j] = act(d, 0).f(clip(st.a[j]));
      const double* z = &st.g[0];
      const double* r = &st.g[H];
      for (int64_t j = 0; j < H; ++j) {
        double u = rb[2 * H + j];
        for (int64_t k = 0; k < H; ++k)
          u += R[(2 * H + j) * H + k] * (linear_before_reset_ ? h[k] : r[k] * h[k]);
        st.u[j] = u;
        st.a[2 * H + j] += linear_before_reset_ ? r[j] * u : u;
      }
      for (int64_t j = 0; j < H; ++j) {
        double hh = st.g[2 * H + j] = act(d, 1).f(clip(st.a[2 * H + j]));
        h_out[j] = (1 - z[j]) * hh + z[j] * h[j];
      }
      return;
    }
    // LSTM, gate order i, o, f, c; peepholes i, o, f.
    const double* P = &p.P[d * 3 * H];
    st.c_new.assign(H, 0.0);
    for (int64_t j = 0; j < H; ++j) {
      st.a[j] += P[j] * c[j];
      st.a[2 * H + j] += P[2 * H + j] * c[j];
      double i = st.g[j] = act(d, 0).f(clip(st.a[j]));
      double f = st.g[2 * H + j] = input_forget_ ? 1 - i : act(d, 0).f(clip(st.a[2 * H + j]));
      double cc = st.g[3 * H + j] = act(d, 1).f(clip(st.a[3 * H + j]));
      double cn = st.c_new[j] = f * c[j] + i * cc;
      st.a[H + j] += P[H + j] * cn;
      double o = st.g[H + j] = act(d, 0).f(clip(st.a[H + j]));
      c_out[j] = cn;
      h_out[j] = o * act(d, 2).f(cn);
    }
  }

  // Runs all directions; `cache` (if given) gets steps[d][b][t].
  void run(const Problem& p, std::vector<double>& y, std::vector<double>& yh,
           std::vector<double>& yc, std::vector<std::vector<std::vector<Step>>>* cache) const {
    const int64_t H = p.H;
    if (cache) cache->assign(dirs_, std::vector<std::vector<Step>>(p.B, std::vector<Step>(p.S)));
    std::vector<double> h(H), c(H), hn(H), cn(H);
    Step scratch;
    for (int d = 0; d < dirs_; ++d) {
      for (int64_t b = 0; b < p.B; ++b) {
        std::copy_n(&p.h0[(d * p.B + b) * H], H, h.begin());
        std::copy_n(&p.c0[(d * p.B + b) * H], H, c.begin());
        const int64_t L = p.lens[b];
        for (int64_t step = 0; step < L; ++step) {
          int64_t t = reversed(d) ? L - 1 - step : step;
          Step& st = cache ? (*cache)[d][b][t] : scratch;
          cell(p, d, &p.X[(t * p.B + b) * p.I], h.data(), c.data(), hn.data(), cn.data(), st);
          h.swap(hn);
          if (kind_ == CellKind::Lstm) c.swap(cn);
          std::copy_n(h.begin(), H, &y[((t * dirs_ + d) * p.B + b) * H]);
        }
        std::copy_n(h.begin(), H, &yh[(d * p.B + b) * H]);
        std::copy_n(c.begin(), H, &yc[(d * p.B + b) * H]);
      }
    }
  }

  CellKind kind_;
  std::string node_;
  int64_t gates_ = 1, dirs_ = 1, layout_ = 0, hidden_attr_ = -1;
  bool reverse_first_ = false, input_forget_ = false, linear_before_reset_ = false;
  double clip_ = 0;
  std::vector<Activation> acts_;
};

void RecurrentOp::backward(std::span<const Tensor> gy, std::span<const Tensor> in,
                           std::span<const Tensor>, std::span<Tensor> gx) {
  Problem p = load(in);
  const int64_t G = gates_, H = p.H, I = p.I, B = p.B, S = p.S;
  std::vector<double> y(S * dirs_ * B * H, 0.0), yh(dirs_ * B * H), yc(yh.size());
  std::vector<std::vector<std::vector<Step>>> cache;
  run(p, y, yh, yc, &cache);

  // Output gradients in canonical layout (absent = zero).
  auto grad = [&](size_t i, const Shape& canon, const Shape& stored,
                  const std::vector<int>& to_canon) {
    std::vector<double> v(numel(canon), 0.0);
    if (i < gy.size() && gy[i].defined()) {
      v = gy[i].to_double_vector();
      if (layout_ == 1) v = permute(v, stored, to_canon);
    }
    return v;
  };
  auto gY = grad(0, {S, dirs_, B, H}, {B, S, dirs_, H}, {1, 2, 0, 3});
  auto gYh = grad(1, {dirs_, B, H}, {B, dirs_, H}, {1, 0, 2});
  auto gYc = kind_ == CellKind::Lstm ? grad(2, {dirs_, B, H}, {B, dirs_, H}, {1, 0, 2})
                                     : std::vector<double>(dirs_ * B * H, 0.0);

  std::vector<double> dX(p.X.size(), 0.0), dW(p.W.size(), 0.0), dR(p.R.size(), 0.0),
      dB(p.Bias.size(), 0.0), dP(p.P.size(), 0.0), dh0(p.h0.size(), 0.0), dc0(p.c0.size(), 0.0);
  std::vector<double> dh(H), dc(H), da(G * H), dh_prev(H), dc_prev(H);
  for (int d = 0; d < dirs_; ++d) {
    const double* W = &p.W[d * G * H * I];
    const double* R = &p.R[d * G * H * H];
    const double* P = &p.P[d * 3 * H];
    double* gW = &dW[d * G * H * I];
    double* gR = &dR[d * G * H * H];
    double* gwb = &dB[d * 2 * G * H];
    double* grb = gwb + G * H;
    double* gP = &dP[d * 3 * H];
    for (int64_t b = 0; b < B; ++b) {
      std::copy_n(&gYh[(d * B + b) * H], H, dh.begin());
      std::copy_n(&gYc[(d * B + b) * H], H, dc.begin());
      const int64_t L = p.lens[b];
      for (int64_t step = L - 1; step >= 0; --step) {
        const int64_t t = reversed(d) ? L - 1 - step : step;
        const Step& st = cache[d][b][t];
        const double* x = &p.X[(t * B + b) * I];
        const double* hp = st.h_prev.data();
        for (int64_t j = 0; j < H; ++j) dh[j] += gY[((t * dirs_ + d) * B + b) * H + j];
        std::fill(dh_prev.begin(), dh_prev.end(), 0.0);
        std::fill(dc_prev.begin(), dc_prev.end(), 0.0);
        // da: gradient of the pre-activations whose R term is R_g * h_prev (+ rb).
        std::fill(da.begin(), da.end(), 0.0);
        auto dact = [&](int k, int64_t j) {  // derivative of gate j's activation k
          return act(d, k).df(clip(st.a[j])) * clip_grad(st.a[j]);
        };
        double* dx = &dX[(t * B + b) * I];
        if (kind_ == CellKind::Rnn) {
          for (int64_t j = 0; j < H; ++j) da[j] = dh[j] * dact(0, j);
        } else if (kind_ == CellKind::Gru) {
          const double* z = &st.g[0];
          const double* r = &st.g[H];
          const double* hh = &st.g[2 * H];
          std::vector<double> dah(H), dr(H, 0.0);
          for (int64_t j = 0; j < H; ++j) {
            double dz = dh[j] * (hp[j] - hh[j]);
            dah[j] = dh[j] * (1 - z[j]) * dact(1, 2 * H + j);
            dh_prev[j] += dh[j] * z[j];
            da[j] = dz * dact(0, j);
          }
          // Hidden gate: input part, then recurrent part through u.
          for (int64_t j = 0; j < H; ++j) {
            const int64_t row = 2 * H + j;
            gwb[row] += dah[j];
            for (int64_t k = 0; k < I; ++k) {
              gW[row * I + k] += dah[j] * x[k];
              dx[k] += W[row * I + k] * dah[j];
            }
            double du = linear_before_reset_ ? dah[j] * r[j] : dah[j];
            if (linear_before_reset_) dr[j] += dah[j] * st.u[j];
            grb[row] += du;
            for (int64_t k = 0; k < H; ++k) {
              double hin = linear_before_reset_ ? hp[k] : r[k] * hp[k];
              gR[row * H + k] += du * hin;
              double dhin = R[row * H + k] * du;
              if (linear_before_reset_) {
                dh_prev[k] += dhin;
              } else {
                dr[k] += dhin * hp[k];
                dh_prev[k] += dhin * r[k];
              }
            }
          }
          for (int64_t j = 0; j < H; ++j) da[H + j] = dr[j] * dact(0, H + j);
        } else {
          const double* ig = &st.g[0];
          const double* og = &st.g[H];
          const double* fg = &st.g[2 * H];
          const double* cc = &st.g[3 * H];
          for (int64_t j = 0; j < H; ++j) {
            double cn = st.c_new[j];
            double dcn = dc[j] + dh[j] * og[j] * act(d, 2).df(cn);
            double dao = dh[j] * act(d, 2).f(cn) * dact(0, H + j);
            dcn += P[H + j] * dao;
            gP[H + j] += dao * cn;
            double di = dcn * cc[j];
            double df = dcn * st.c_prev[j];
            double dcc = dcn * ig[j];
            dc_prev[j] = dcn * fg[j];
            double dai, daf = 0;
            if (input_forget_) {
              dai = (di - df) * dact(0, j);
            } else {
              dai = di * dact(0, j);
              daf = df * dact(0, 2 * H + j);
            }
            dc_prev[j] += P[j] * dai + P[2 * H + j] * daf;
            gP[j] += dai * st.c_prev[j];
            gP[2 * H + j] += daf * st.c_prev[j];
            da[j] = dai;
            da[H + j] = dao;
            da[2 * H + j] = daf;
            da[3 * H + j] = dcc * dact(1, 3 * H + j);
          }
        }
        // Shared: gates whose pre-activation is W x + R h_prev + wb + rb.
        const int64_t rows = kind_ == CellKind::Gru ? 2 * H : G * H;
        for (int64_t j = 0; j < rows; ++j) {
          if (da[j] == 0) continue;
          gwb[j] += da[j];
          grb[j] += da[j];
          for (int64_t k = 0; k < I; ++k) {
            gW[j * I + k] += da[j] * x[k];
            dx[k] += W[j * I + k] * da[j];
          }
          for (int64_t k = 0; k < H; ++k) {
            gR[j * H + k] += da[j] * hp[k];
            dh_prev[k] += R[j * H + k] * da[j];
          }
        }
        dh = dh_prev;
        if (kind_ == CellKind::Lstm) dc = dc_prev;
      }
      std::copy_n(dh.begin(), H, &dh0[(d * B + b) * H]);
      std::copy_n(dc.begin(), H, &dc0[(d * B + b) * H]);
    }
  }

  DataType dt = in[0].dtype();
  auto set = [&](size_t i, std::vector<double> v) {
    if (i >= gx.size() || !ops::optional_input(in, i)) return;
    if (layout_ == 1 && i == 0) v = permute(v, {S, B, I}, {1, 0, 2});
    if (layout_ == 1 && (i == 5 || i == 6)) v = permute(v, {dirs_, B, H}, {1, 0, 2});
    gx[i] = Tensor::from_vector<double>(in[i].shape(), v).cast(dt);
  };
  set(0, dX);
  set(1, dW);
  set(2, dR);
  set(3, dB);
  set(5, dh0);
  if (kind_ == CellKind::Lstm) {
    set(6, dc0);
    set(7, dP);
  }
}

void add_recurrent(Registry& r, const std::string& op_type, CellKind kind) {
  r.add({"", op_type, 1, INT_MAX, "reference", "reference:" + op_type,
         ops::make_factory<RecurrentOp>(kind)});
}

}  // namespace

void register_rnn(Registry& r) {
  add_recurrent(r, "RNN", CellKind::Rnn);
  add_recurrent(r, "GRU", CellKind::Gru);
  add_recurrent(r, "LSTM", CellKind::Lstm);
}

}  // namespace deep500::reference
