// Backpropagation through time for the eigen RNN / GRU / LSTM (default
// activations), one direction: per step, the gates' pre-activation gradients
// of the whole batch as array expressions and one product with R for the
// previous state's gradient; then W's, R's, X's and the biases' gradients as
// one product (or column sum) each over all steps. The reference walks each
// row and step with scalar loops in double.
#include "frameworks/eigen/rnn_layer.h"
#include "frameworks/eigen/small_gemm.h"

namespace deep500::eigen::rnn {
namespace {

// dst (+)= src * b, b row-major with src.cols() rows and leading dimension
// ldb, read in place (the per-step product with R).
template <class T, class Dst, class Src>
void times(Dst&& dst, const Src& src, const T* b, int64_t ldb, bool accumulate) {
  if (src.rows() == 1) {
    const Eigen::Map<const Mat<T>, 0, Eigen::OuterStride<>> bm(b, src.cols(), dst.cols(),
                                                               Eigen::OuterStride<>(ldb));
    if (accumulate)
      dst.row(0).noalias() += src.row(0) * bm;
    else
      dst.row(0).noalias() = src.row(0) * bm;
    return;
  }
  small_gemm<T>({src.data(), src.outerStride(), b, ldb, dst.data(), dst.outerStride(), src.rows(),
                 dst.cols(), src.cols()},
                accumulate);
}

template <class T>
using RowVec = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>;

template <class T>
class Backprop {
 public:
  Backprop(const Layer& l, int64_t dir, const Trace<T>& trace, const DirectionGrads<T>& g)
      : l_(l), dir_(dir), tr_(trace), g_(g), H_(l.H) {}

  void run() {
    const int64_t B = l_.B, H = H_;
    da_.resize(l_.S * B, l_.G * H);
    if (l_.cell == Cell::Gru) du_.resize(l_.S * B, H);
    Mat<T> dh = initial(g_.gyh), dc = initial(g_.gyc), dh_prev(B, H), dc_prev(B, H);
    for (int64_t k = l_.S - 1; k >= 0; --k) {
      const int64_t t = l_.backwards(dir_) ? l_.S - 1 - k : k;
      add_output_gradient(t, dh);
      Rows<T> a = l_.rows_at(da_, t);
      if (l_.cell == Cell::Rnn) rnn_step(t, dh, a, dh_prev);
      if (l_.cell == Cell::Gru) gru_step(t, dh, a, dh_prev);
      if (l_.cell == Cell::Lstm) lstm_step(t, dh, dc, a, dh_prev, dc_prev);
      pass_idle_rows(t, dh, dc, a, dh_prev, dc_prev);
      dh.swap(dh_prev);
      dc.swap(dc_prev);
    }
    for (int64_t b = 0; b < B; ++b) {
      if (g_.dh0) MatMap<T>(g_.dh0 + l_.state_at(dir_, b), 1, H) = dh.row(b);
      if (g_.dc0) MatMap<T>(g_.dc0 + l_.state_at(dir_, b), 1, H) = dc.row(b);
    }
    whole_sequence_products();
  }

 private:
  // The final state's gradient (zeros where the output's gradient is absent).
  Mat<T> initial(const T* g) const {
    Mat<T> s = Mat<T>::Zero(l_.B, H_);
    if (g)
      for (int64_t b = 0; b < l_.B; ++b) s.row(b) = RowVec<T>(g + l_.state_at(dir_, b), H_);
    return s;
  }

  void add_output_gradient(int64_t t, Mat<T>& dh) const {
    if (!g_.gy) return;
    for (int64_t b = 0; b < l_.B; ++b)
      if (l_.active(t, b)) dh.row(b) += RowVec<T>(g_.gy + l_.y_at(t, dir_, b), H_);
  }

  // h = tanh(a).
  void rnn_step(int64_t t, const Mat<T>& dh, Rows<T>& a, Mat<T>& dh_prev) const {
    const auto h = l_.rows_at(tr_.gates, t).array();
    a = (dh.array() * (T(1) - h.square())).matrix();
    times(dh_prev, a, g_.r.data(), H_, false);
  }

  // h' = (1 - z) hh + z h, hh = tanh(x W_h + r * u) (linear_before_reset,
  // u = h R_h^T + Rb_h) or tanh(x W_h + (r * h) R_h^T + Rb_h).
  void gru_step(int64_t t, const Mat<T>& dh, Rows<T>& a, Mat<T>& dh_prev) {
    const int64_t H = H_;
    const auto gates = l_.rows_at(tr_.gates, t).array();
    const auto z = gates.leftCols(H), r = gates.middleCols(H, H), hh = gates.rightCols(H);
    const auto hp = l_.rows_at(tr_.h_prev, t).array();
    const auto u = l_.rows_at(tr_.u, t).array();
    const auto g = dh.array();
    a.leftCols(H) = (g * (hp - hh) * z * (T(1) - z)).matrix();
    a.rightCols(H) = (g * (T(1) - z) * (T(1) - hh.square())).matrix();
    dh_prev = (g * z).matrix();
    Rows<T> du = l_.rows_at(du_, t);
    const T* r_h = g_.r.data() + 2 * H * H;
    if (l_.linear_before_reset) {
      du = (a.rightCols(H).array() * r).matrix();
      a.middleCols(H, H) = (a.rightCols(H).array() * u * r * (T(1) - r)).matrix();
      times(dh_prev, du, r_h, H, true);
    } else {
      du = a.rightCols(H);
      gated_.resize(l_.B, H);
      times(gated_, du, r_h, H, false);  // d(r * h)
      a.middleCols(H, H) = (gated_.array() * hp * r * (T(1) - r)).matrix();
      dh_prev.array() += gated_.array() * r;
    }
    times(dh_prev, a.leftCols(2 * H), g_.r.data(), H, true);
  }

  // c' = f c + i cc, h' = o tanh(c').
  void lstm_step(int64_t t, const Mat<T>& dh, const Mat<T>& dc, Rows<T>& a, Mat<T>& dh_prev,
                 Mat<T>& dc_prev) const {
    const int64_t H = H_;
    const auto gates = l_.rows_at(tr_.gates, t).array();
    const auto i = gates.leftCols(H), o = gates.middleCols(H, H), f = gates.middleCols(2 * H, H),
               cc = gates.rightCols(H);
    const Arr2<T> tc = l_.rows_at(tr_.c_new, t).array().tanh();
    const Arr2<T> dcn = dc.array() + dh.array() * o * (T(1) - tc.square());
    a.leftCols(H) = (dcn * cc * i * (T(1) - i)).matrix();
    a.middleCols(H, H) = (dh.array() * tc * o * (T(1) - o)).matrix();
    a.middleCols(2 * H, H) = (dcn * l_.rows_at(tr_.c_prev, t).array() * f * (T(1) - f)).matrix();
    a.rightCols(H) = (dcn * i * (T(1) - cc.square())).matrix();
    dc_prev = (dcn * f).matrix();
    times(dh_prev, a, g_.r.data(), H, false);
  }

  // A row outside its sequence at step t kept its state: its gradient
  // passes through, its gates get none.
  void pass_idle_rows(int64_t t, const Mat<T>& dh, const Mat<T>& dc, Rows<T>& a, Mat<T>& dh_prev,
                      Mat<T>& dc_prev) {
    for (int64_t b = 0; b < l_.B; ++b) {
      if (l_.active(t, b)) continue;
      a.row(b).setZero();
      if (l_.cell == Cell::Gru) l_.rows_at(du_, t).row(b).setZero();
      dh_prev.row(b) = dh.row(b);
      dc_prev.row(b) = dc.row(b);
    }
  }

  // dW = dA^T X, dX = dA W, dR = dA_R^T h_in, the biases' column sums; dA_R
  // is dA but for the GRU's hidden gate (du), whose recurrent input h_in is
  // h (linear_before_reset) or r * h (the trace's u).
  void whole_sequence_products() {
    const int64_t GH = l_.G * H_, H = H_;
    MatMap<T>(g_.dw, GH, l_.I).noalias() = da_.transpose() * g_.x;
    MatMap<T> dx = g_.dx;
    dx.noalias() = da_ * g_.w;
    MatMap<T> dr(g_.dr, GH, H);
    Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>> dwb(g_.db, GH), drb(g_.db + GH, GH);
    dwb = da_.colwise().sum();
    drb = dwb;
    if (l_.cell != Cell::Gru) {
      dr.noalias() = da_.transpose() * tr_.h_prev;
      return;
    }
    dr.topRows(2 * H).noalias() = da_.leftCols(2 * H).transpose() * tr_.h_prev;
    dr.bottomRows(H).noalias() = du_.transpose() * (l_.linear_before_reset ? tr_.h_prev : tr_.u);
    drb.tail(H) = du_.colwise().sum();
  }

  const Layer& l_;
  int64_t dir_;
  const Trace<T>& tr_;
  const DirectionGrads<T>& g_;
  int64_t H_;
  Mat<T> da_, du_, gated_;
};

}  // namespace

template <class T>
void backward_direction(const Layer& l, int64_t dir, const Trace<T>& trace,
                        const DirectionGrads<T>& g) {
  Backprop<T>(l, dir, trace, g).run();
}

template void backward_direction<float>(const Layer&, int64_t, const Trace<float>&,
                                        const DirectionGrads<float>&);
template void backward_direction<double>(const Layer&, int64_t, const Trace<double>&,
                                         const DirectionGrads<double>&);

}  // namespace deep500::eigen::rnn
