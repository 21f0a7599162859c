// C (+)= A B for the few rows of a recurrent step (A: the batch's hidden
// states), all row-major with leading dimensions. A general GEMM packs B
// anew on every call, once per time step for the same recurrent weights;
// here B (the weights, transposed once per call of the layer) is read in
// place and each block of C (4 rows x 4 vector widths) stays in registers
// across the whole inner dimension.
#pragma once

#include <algorithm>
#include <cstdint>

namespace deep500::eigen {

template <class T>
struct GemmOperands {
  const T* a;
  int64_t lda;
  const T* b;
  int64_t ldb;
  T* c;
  int64_t ldc;
  int64_t m, n, k;
};

namespace detail {

// GCC vectorizes with 256-bit registers by default even where AVX-512 is
// there; the register block below is sized for 512-bit ones.
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#else
constexpr int kVectorBytes = 32;
#endif
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#define DEEP500_WIDE_VECTORS __attribute__((target("prefer-vector-width=512")))
#else
#define DEEP500_WIDE_VECTORS
#endif

// One block of C: rows [i0, i0 + MB), columns [j0, j0 + NB); sizes known at
// compile time so the accumulators live in vector registers.
template <class T, int MB, int NB>
DEEP500_WIDE_VECTORS void full_block(const GemmOperands<T>& g, int64_t i0, int64_t j0,
                                     bool accumulate) {
  T acc[MB][NB];
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < NB; ++j) acc[i][j] = accumulate ? g.c[(i0 + i) * g.ldc + j0 + j] : T(0);
  for (int64_t p = 0; p < g.k; ++p) {
    const T* brow = g.b + p * g.ldb + j0;
    for (int i = 0; i < MB; ++i) {
      const T av = g.a[(i0 + i) * g.lda + p];
      for (int j = 0; j < NB; ++j) acc[i][j] += av * brow[j];
    }
  }
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < NB; ++j) g.c[(i0 + i) * g.ldc + j0 + j] = acc[i][j];
}

// Any block (the edges): row by row, vectorized along the columns.
template <class T>
void edge_block(const GemmOperands<T>& g, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                bool accumulate) {
  for (int64_t i = i0; i < i1; ++i) {
    T* crow = g.c + i * g.ldc;
    if (!accumulate) std::fill(crow + j0, crow + j1, T(0));
    for (int64_t p = 0; p < g.k; ++p) {
      const T av = g.a[i * g.lda + p];
      const T* brow = g.b + p * g.ldb;
      for (int64_t j = j0; j < j1; ++j) crow[j] += av * brow[j];
    }
  }
}

}  // namespace detail

// C = A B, or C += A B with `accumulate`.
template <class T>
void small_gemm(const GemmOperands<T>& g, bool accumulate) {
  // 4 rows x 4 vectors: 16 accumulator registers.
  constexpr int MB = 4, NB = 4 * detail::kVectorBytes / static_cast<int>(sizeof(T));
  const int64_t m_full = g.m / MB * MB, n_full = g.n / NB * NB;
  for (int64_t i0 = 0; i0 < m_full; i0 += MB) {
    for (int64_t j0 = 0; j0 < n_full; j0 += NB)
      detail::full_block<T, MB, NB>(g, i0, j0, accumulate);
    if (n_full < g.n) detail::edge_block(g, i0, i0 + MB, n_full, g.n, accumulate);
  }
  if (m_full < g.m) detail::edge_block(g, m_full, g.m, 0, g.n, accumulate);
}

}  // namespace deep500::eigen
