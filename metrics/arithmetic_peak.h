// The machine's float32 arithmetic peak, measured: independent chains of
// fused multiply-adds in the widest vector ISA the CPU reports (AVX-512F,
// else AVX2 with FMA, else SSE multiply and add), on `threads` threads at
// once. What percent-of-peak figures divide by: a GEMM is a kernel under
// test, never the peak itself (oneDNN's dnnl_sgemm beats its own matmul
// primitive on large 2-D problems).
#pragma once

#include <string>

namespace deep500::metrics {

struct ArithmeticPeak {
  double flops_per_second = 0;  // all threads together (a multiply-add is 2 FLOPs)
  std::string isa;              // "avx512f", "avx2+fma" or "sse"
  int threads = 1;
};

// The best of three runs of ~25 ms (AVX-512; longer on narrower ISAs); threads
// <= 0: std::thread::hardware_concurrency().
ArithmeticPeak measure_arithmetic_peak(int threads);
// How results name it: "avx512f FMA loop, 1 thread".
std::string describe(const ArithmeticPeak& peak);

}  // namespace deep500::metrics
