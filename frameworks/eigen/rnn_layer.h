// Internal to the eigen recurrent kernels (rnn.cc, rnn_backward.cc): one
// call's geometry, the per-step values the forward keeps for backward, and
// backpropagation through time for one direction.
#pragma once

#include <cstdint>
#include <vector>

#include "frameworks/eigen/common.h"

namespace deep500::eigen::rnn {

enum class Cell { Rnn, Gru, Lstm };

// A step's B rows of a matrix whose rows are X's.
template <class T>
using Rows = Eigen::Map<Mat<T>, 0, Eigen::OuterStride<>>;

inline int64_t gates_of(Cell c) {
  return c == Cell::Rnn ? 1 : c == Cell::Gru ? 3 : 4;
}

// Sizes and layout of one call: S steps, B rows, I inputs, H hidden units,
// G gates; lens empty when every row runs all S steps.
struct Layer {
  Cell cell;
  bool linear_before_reset;
  int64_t dirs, layout;
  bool reverse;  // direction "reverse" (with two directions, dir 1 runs backwards)
  int64_t S, B, I, H, G;
  std::vector<int64_t> lens;

  bool backwards(int64_t dir) const { return dirs == 2 ? dir == 1 : reverse; }
  // Whether row b takes step t (else it keeps its state and outputs zeros).
  bool active(int64_t t, int64_t b) const { return lens.empty() || t < lens[b]; }
  // Offset of (t, b) rows in X and of (t, dir, b) / (dir, b) in the outputs.
  int64_t x_row(int64_t t, int64_t b) const { return layout == 0 ? t * B + b : b * S + t; }
  int64_t y_at(int64_t t, int64_t dir, int64_t b) const {
    return (layout == 0 ? (t * dirs + dir) * B + b : (b * S + t) * dirs + dir) * H;
  }
  int64_t state_at(int64_t dir, int64_t b) const {
    return (layout == 0 ? dir * B + b : b * dirs + dir) * H;
  }
  // Step t's B rows of a matrix whose rows are X's (S * B of them).
  template <class T>
  Rows<T> rows_at(Mat<T>& m, int64_t t) const {
    return {m.data() + x_row(t, 0) * m.cols(), B, m.cols(), row_stride(m.cols())};
  }
  template <class T>
  Eigen::Map<const Mat<T>, 0, Eigen::OuterStride<>> rows_at(const Mat<T>& m, int64_t t) const {
    return {m.data() + x_row(t, 0) * m.cols(), B, m.cols(), row_stride(m.cols())};
  }
  Eigen::OuterStride<> row_stride(int64_t cols) const {
    return Eigen::OuterStride<>((x_row(0, 1) - x_row(0, 0)) * cols);
  }
};

// What backward needs of one direction's forward, rows as X's: the state
// before each step, the gates after their activations (GRU z, r and the
// candidate; LSTM i, o, f, c), the cell state before and after (LSTM), and
// the hidden gate's recurrent input (GRU: h R_h^T + Rb_h with
// linear_before_reset, else r * h).
template <class T>
struct Trace {
  Mat<T> h_prev, gates, c_prev, c_new, u;
  void resize(const Layer& l) {
    const int64_t rows = l.S * l.B;
    h_prev.resize(rows, l.H);
    gates.resize(rows, l.G * l.H);
    if (l.cell == Cell::Lstm) c_prev.resize(rows, l.H), c_new.resize(rows, l.H);
    if (l.cell == Cell::Gru) u.resize(rows, l.H);
  }
};

// One direction's gradients. Inputs: the output gradients (null where
// absent; gy at y_at, gyh / gyc at state_at), X (S * B rows), this
// direction's W and R. Outputs: dx accumulated (S * B x I), this
// direction's dW, dR, dB (2 G H: W's biases, then R's), dh0 / dc0 written
// at state_at.
template <class T>
struct DirectionGrads {
  const T *gy, *gyh, *gyc;
  CMatMap<T> x, w, r;
  MatMap<T> dx;
  T *dw, *dr, *db, *dh0, *dc0;
};

template <class T>
void backward_direction(const Layer& l, int64_t dir, const Trace<T>& trace,
                        const DirectionGrads<T>& g);

}  // namespace deep500::eigen::rnn
