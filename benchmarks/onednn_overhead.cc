// Overhead of the deep500 oneDNN backend: our registry path
// (Operator::forward with preallocated outputs) against the same oneDNN
// primitives called directly, interleaved ABAB in one run, on DeepBench
// ResNet-50 convolutions, DeepBench training GEMMs and a tiny Relu; plus a
// large SGEMM through our Gemm against measured FP32 peaks (an AVX-512 FMA
// register loop and dnnl_sgemm best-of).
//
//   OMP_NUM_THREADS=1 ./bench_onednn_overhead [--json out.json] [--quick]
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include "benchmarks/bench_cli.h"
#include "deep/random.h"
#include "frameworks/onednn/common.h"
#include "frameworks/register_all.h"
#include "metrics/runner.h"
#include "metrics/statistics.h"
#include "metrics/workload.h"
#include "operators/registry.h"

using namespace deep500;
using Clock = std::chrono::steady_clock;

// Counts heap allocations, to show that the steady-state path allocates nothing.
static std::atomic<long> g_allocs{0};
void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
using dnnl::memory;

namespace {

double now_s() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

Tensor rnd(Shape s, uint64_t seed) {
  Tensor t(DataType::Float, std::move(s));
  Random(seed).fill_uniform(t, -1, 1);
  return t;
}

ops::Attribute ints(std::vector<int64_t> v) {
  ops::Attribute a;
  a.kind = ops::Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}

std::unique_ptr<ops::Operator> make_op(ops::NodeSpec& spec, const std::vector<Tensor>& in,
                                       std::string* impl) {
  std::vector<TensorDesc> d;
  for (auto& t : in) d.push_back(t.desc());
  for (size_t i = 0; i < in.size(); ++i) spec.inputs.push_back("x" + std::to_string(i));
  spec.outputs = {"y"};
  ops::OpContext ctx{spec, d};
  auto made = ops::Registry::global().create(ctx, {"onednn"});
  if (!made.ok()) {
    std::fprintf(stderr, "%s\n", made.refusal().reason.c_str());
    std::exit(1);
  }
  *impl = made->implementation;
  return std::move(made->op);
}

// What the operator's last call really ran (oneDNN impl_info_str).
std::string ran(const ops::Operator& op) {
  auto* k = dynamic_cast<const onednn::Kernel*>(&op);
  return k ? k->last_impl() : "?";
}

// The median and its distribution-free 95% confidence interval.
struct Stat {
  double median, lo, hi;
};
Stat stat(const metrics::Summary& s, double scale = 1) {
  return {s.median * scale, s.ci_low * scale, s.ci_high * scale};
}
Stat stat(std::vector<double> v) {
  return stat(metrics::summarize(std::move(v)));
}

struct Row {
  std::string name, impl, raw_impl;
  double flops = 0;
  Stat ours, raw, ratio, overhead_us;
  double ours_min = 0, raw_min = 0;  // best-of: robust to interference on a shared machine
  // Heap allocations per call in steady state (oneDNN's C execute itself
  // builds an argument map, so neither path reaches 0).
  double allocs_per_call = -1, raw_allocs_per_call = -1;
  double conv_only_ms = -1;  // raw conv primitive alone (blocked layouts), for reference
  int samples = 0, calls_per_sample = 1;
};

// Side by side (metrics::Runner::run_paired): each sample pair times `calls`
// calls of A and of B back to back, the order alternating.
template <class A, class B>
void measure(Row& r, A&& ours, B&& raw, double budget_s, int max_samples) {
  for (int i = 0; i < 3; ++i) {  // warm-up (also calibrates)
    ours();
    raw();
  }
  long a0 = g_allocs.load();
  for (int i = 0; i < 5; ++i) ours();
  r.allocs_per_call = (g_allocs.load() - a0) / 5.0;
  a0 = g_allocs.load();
  for (int i = 0; i < 5; ++i) raw();
  r.raw_allocs_per_call = (g_allocs.load() - a0) / 5.0;
  double t0 = now_s();
  ours();
  double one = now_s() - t0;
  int calls = one < 20e-6 ? 2000 : one < 200e-6 ? 100 : 1;
  r.calls_per_sample = calls;
  metrics::RunnerSettings s;
  s.warmup = 0;  // warmed above
  s.batch = calls;
  s.min_repetitions = std::min(7, max_samples);
  s.max_repetitions = max_samples;
  s.min_time_seconds = budget_s;
  s.max_time_seconds = 60 + 20 * budget_s;
  metrics::CallableWorkload a("deep500", ours), b("raw", raw);
  const metrics::PairedResult p = metrics::Runner(s).run_paired(a, b);
  r.samples = static_cast<int>(p.a.seconds.size());
  r.ours_min = p.a.summary.min;
  r.raw_min = p.b.summary.min;
  r.ours = stat(p.a.summary);
  r.raw = stat(p.b.summary);
  r.ratio = stat(p.ratio);
  r.overhead_us = stat(p.difference, 1e6);
}

// ---- convolution --------------------------------------------------------------

struct ConvShape {
  const char* name;
  int64_t n, c, h, w, k, r, stride, pad;
};

Row bench_conv(const ConvShape& s, double budget) {
  Row row;
  int64_t oh = (s.h + 2 * s.pad - s.r) / s.stride + 1, ow = (s.w + 2 * s.pad - s.r) / s.stride + 1;
  row.name = std::string("conv ") + s.name + " N=" + std::to_string(s.n);
  row.flops = 2.0 * s.n * s.k * oh * ow * s.c * s.r * s.r;
  Tensor x = rnd({s.n, s.c, s.h, s.w}, 1), w = rnd({s.k, s.c, s.r, s.r}, 2);
  ops::NodeSpec spec;
  spec.op_type = "Conv";
  spec.opset = 13;
  spec.name = "conv";
  spec.attributes.set("strides", ints({s.stride, s.stride}));
  spec.attributes.set("pads", ints({s.pad, s.pad, s.pad, s.pad}));
  std::vector<Tensor> in = {x, w};
  auto op = make_op(spec, in, &row.impl);
  std::vector<Tensor> out(1);
  op->forward(in, out);  // preallocates the output

  // Raw: the same descriptors, primitives created and executed directly.
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  auto any = [](memory::dims d) {
    return memory::desc(d, memory::data_type::f32, memory::format_tag::any);
  };
  memory::dims xd = {s.n, s.c, s.h, s.w}, wd = {s.k, s.c, s.r, s.r}, yd = {s.n, s.k, oh, ow};
  dnnl::convolution_forward::desc cd(dnnl::prop_kind::forward_inference,
                                     dnnl::algorithm::convolution_direct, any(xd), any(wd), any(yd),
                                     {s.stride, s.stride}, {0, 0}, {s.pad, s.pad}, {s.pad, s.pad});
  dnnl::convolution_forward::primitive_desc pd(cd, eng);
  row.raw_impl = std::string("onednn:conv:") + pd.impl_info_str();
  memory ux(memory::desc(xd, memory::data_type::f32, memory::format_tag::nchw), eng, x.raw());
  memory uw(memory::desc(wd, memory::data_type::f32, memory::format_tag::oihw), eng, w.raw());
  Tensor yraw(DataType::Float, {s.n, s.k, oh, ow});
  memory uy(memory::desc(yd, memory::data_type::f32, memory::format_tag::nchw), eng, yraw.raw());
  memory bx = pd.src_desc() == ux.get_desc() ? ux : memory(pd.src_desc(), eng);
  memory bw = pd.weights_desc() == uw.get_desc() ? uw : memory(pd.weights_desc(), eng);
  memory by = pd.dst_desc() == uy.get_desc() ? uy : memory(pd.dst_desc(), eng);
  dnnl::reorder rx, rw, ry;
  if (bx != ux) rx = dnnl::reorder(ux, bx);
  if (bw != uw) rw = dnnl::reorder(uw, bw);
  if (by != uy) ry = dnnl::reorder(by, uy);
  dnnl::convolution_forward conv(pd);
  auto raw = [&] {
    if (rx) rx.execute(strm, ux, bx);
    if (rw) rw.execute(strm, uw, bw);
    conv.execute(strm, {{DNNL_ARG_SRC, bx}, {DNNL_ARG_WEIGHTS, bw}, {DNNL_ARG_DST, by}});
    if (ry) ry.execute(strm, by, uy);
    strm.wait();
  };
  auto ours = [&] { op->forward(in, out); };
  measure(row, ours, raw, budget, 41);
  row.impl = ran(*op);
  // Conv primitive alone, for context (what the NCHW interface costs in reorders).
  std::vector<double> t;
  for (int i = 0; i < std::max(5, row.samples / 3); ++i) {
    double t0 = now_s();
    conv.execute(strm, {{DNNL_ARG_SRC, bx}, {DNNL_ARG_WEIGHTS, bw}, {DNNL_ARG_DST, by}});
    strm.wait();
    t.push_back(now_s() - t0);
  }
  row.conv_only_ms = stat(t).median * 1e3;
  // Sanity: both paths computed the same thing.
  const float* a = out[0].data<float>();
  const float* b = yraw.data<float>();
  for (int64_t i = 0; i < yraw.numel(); i += 97)
    if (std::abs(a[i] - b[i]) > 1e-3f * (1 + std::abs(b[i]))) {
      std::fprintf(stderr, "%s: results differ at %ld\n", row.name.c_str(), static_cast<long>(i));
      std::exit(1);
    }
  return row;
}

// ---- GEMM ---------------------------------------------------------------------

Row bench_gemm(int64_t m, int64_t n, int64_t k, double budget, int max_samples) {
  Row row;
  row.name = "gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  row.flops = 2.0 * m * n * k;
  Tensor a = rnd({m, k}, 3), b = rnd({k, n}, 4);
  ops::NodeSpec spec;
  spec.op_type = "Gemm";
  spec.opset = 13;
  spec.name = "gemm";
  std::vector<Tensor> in = {a, b};
  auto op = make_op(spec, in, &row.impl);
  std::vector<Tensor> out(1);
  op->forward(in, out);
  // Our Gemm calls dnnl_sgemm; raw is the same call made directly.
  row.raw_impl = "onednn:dnnl_sgemm";
  Tensor yraw(DataType::Float, {m, n});
  auto raw = [&] {
    dnnl_sgemm('N', 'N', m, n, k, 1.f, a.data<float>(), k, b.data<float>(), n, 0.f,
               yraw.data<float>(), n);
  };
  auto ours = [&] { op->forward(in, out); };
  measure(row, ours, raw, budget, max_samples);
  row.impl = ran(*op);
  return row;
}

Row bench_relu(int64_t n, double budget) {
  Row row;
  row.name = "relu " + std::to_string(n) + " floats";
  row.flops = static_cast<double>(n);
  Tensor x = rnd({n}, 5);
  ops::NodeSpec spec;
  spec.op_type = "Relu";
  spec.opset = 14;
  spec.name = "relu";
  std::vector<Tensor> in = {x};
  auto op = make_op(spec, in, &row.impl);
  std::vector<Tensor> out(1);
  op->forward(in, out);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  memory::desc md({n}, memory::data_type::f32, memory::format_tag::a);
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_relu,
                                md, 0.f, 0.f);
  dnnl::eltwise_forward::primitive_desc pd(d, eng);
  row.raw_impl = std::string("onednn:eltwise:") + pd.impl_info_str();
  Tensor yraw(DataType::Float, {n});
  memory mx(md, eng, x.raw()), my(md, eng, yraw.raw());
  dnnl::eltwise_forward prim(pd);
  auto raw = [&] {
    prim.execute(strm, {{DNNL_ARG_SRC, mx}, {DNNL_ARG_DST, my}});
    strm.wait();
  };
  auto ours = [&] { op->forward(in, out); };
  measure(row, ours, raw, budget, 201);
  row.impl = ran(*op);
  return row;
}

// ---- FP32 peak ----------------------------------------------------------------

__attribute__((target("avx512f,fma"))) double fma_loop(int64_t iters) {
  // 16 independent accumulators in zmm registers hide the FMA latency on up
  // to two FMA ports; the empty asm keeps them in registers and in order.
  const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
#define D5_ACC(i) __m512 a##i = _mm512_set1_ps(0.001f * i);
#define D5_FMA(i) a##i = _mm512_fmadd_ps(a##i, m, c);
#define D5_ALL(X) \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
  D5_ALL(D5_ACC)
  for (int64_t it = 0; it < iters; ++it) {
    D5_ALL(D5_FMA)
    asm volatile(""
                 : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7));
    asm volatile(""
                 : "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11), "+v"(a12), "+v"(a13), "+v"(a14),
                   "+v"(a15));
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                           _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  s = _mm512_add_ps(s,
                    _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)),
                                  _mm512_add_ps(_mm512_add_ps(a12, a13), _mm512_add_ps(a14, a15))));
#undef D5_ALL
#undef D5_FMA
#undef D5_ACC
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
}

double fma_peak_gflops(int threads) {
  if (!__builtin_cpu_supports("avx512f")) return 0;
  const int64_t iters = 30'000'000;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<std::thread> ts;
    std::vector<double> sink(static_cast<size_t>(threads));
    double t0 = now_s();
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { sink[t] = fma_loop(iters); });
    for (auto& t : ts) t.join();
    double dt = now_s() - t0;
    best = std::max(best, threads * iters * 16.0 * 16 * 2 / dt / 1e9);
  }
  return best;
}

struct Sgemm {
  int64_t n;
  double ours_best, ours_median, sgemm_best;
};

Sgemm bench_big(int64_t n, int reps) {
  Sgemm r{n, 0, 0, 0};
  Tensor a = rnd({n, n}, 6), b = rnd({n, n}, 7), c(DataType::Float, {n, n});
  ops::NodeSpec spec;
  spec.op_type = "Gemm";
  spec.opset = 13;
  spec.name = "gemm";
  std::vector<Tensor> in = {a, b};
  std::string impl;
  auto op = make_op(spec, in, &impl);
  std::vector<Tensor> out(1);
  op->forward(in, out);
  dnnl_sgemm('N', 'N', n, n, n, 1.f, a.data<float>(), n, b.data<float>(), n, 0.f, c.data<float>(),
             n);
  double fl = 2.0 * n * n * n;
  std::vector<double> ours;
  for (int i = 0; i < reps; ++i) {  // interleaved
    double t0 = now_s();
    op->forward(in, out);
    ours.push_back(fl / (now_s() - t0) / 1e9);
    t0 = now_s();
    dnnl_sgemm('N', 'N', n, n, n, 1.f, a.data<float>(), n, b.data<float>(), n, 0.f, c.data<float>(),
               n);
    r.sgemm_best = std::max(r.sgemm_best, fl / (now_s() - t0) / 1e9);
  }
  r.ours_best = *std::max_element(ours.begin(), ours.end());
  r.ours_median = stat(ours).median;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  bool quick = false;
  {
    CLI::App app{
        "overhead of deep500's oneDNN backend against raw oneDNN, and FP32 peaks "
        "(threads: OMP_NUM_THREADS)",
        "bench_onednn_overhead"};
    deep500::bench::one_line_errors(app, "bench_onednn_overhead");
    app.add_option("--json", json_path, "write every row here")->type_name("FILE");
    app.add_flag("--quick", quick, "shorter time budgets, no 4096^3 SGEMM");
    deep500::bench::parse_or_exit(app, argc, argv);
  }
  frameworks::register_all();
  const char* env = std::getenv("OMP_NUM_THREADS");
  int threads =
      env ? std::max(1, std::atoi(env)) : static_cast<int>(std::thread::hardware_concurrency());
  std::printf("oneDNN %d.%d.%d, OMP_NUM_THREADS=%d\n", dnnl_version()->major, dnnl_version()->minor,
              dnnl_version()->patch, threads);
  double b = quick ? 0.3 : 1.2;

  std::vector<Row> rows;
  std::vector<ConvShape> convs = {{"3x224x224 k64 7x7/2 (stem)", 1, 3, 224, 224, 64, 7, 2, 3},
                                  {"64x56x56 k64 3x3", 1, 64, 56, 56, 64, 3, 1, 1},
                                  {"64x56x56 k256 1x1", 1, 64, 56, 56, 256, 1, 1, 0},
                                  {"128x28x28 k128 3x3", 1, 128, 28, 28, 128, 3, 1, 1},
                                  {"256x14x14 k256 3x3", 1, 256, 14, 14, 256, 3, 1, 1},
                                  {"512x7x7 k512 3x3", 1, 512, 7, 7, 512, 3, 1, 1},
                                  {"64x56x56 k64 3x3", 16, 64, 56, 56, 64, 3, 1, 1},
                                  {"256x14x14 k256 3x3", 16, 256, 14, 14, 256, 3, 1, 1},
                                  {"512x7x7 k512 3x3", 16, 512, 7, 7, 512, 3, 1, 1}};
  for (const auto& c : convs) rows.push_back(bench_conv(c, c.n > 1 ? 2 * b : b));
  for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{
           {1760, 128, 1760}, {2560, 64, 2560}, {4096, 128, 4096}, {1760, 7000, 1760}})
    rows.push_back(bench_gemm(m, n, k, m * n * k > 1e10 ? 3 * b : b, 41));
  rows.push_back(bench_relu(64, b));

  std::printf("\n%-36s %10s %10s %8s %17s %11s %9s %10s %9s  %s\n", "shape", "ours ms", "raw ms",
              "ratio", "ratio 95% CI", "ovh us", "GFLOP/s", "allocs o/r", "min ratio",
              "implementation (ours | raw)");
  for (const auto& r : rows)
    std::printf(
        "%-36s %10.4f %10.4f %8.4f [%7.4f,%7.4f] %11.3f %9.1f %4.0f/%-5.0f %9.4f  %s | %s%s\n",
        r.name.c_str(), r.ours.median * 1e3, r.raw.median * 1e3, r.ratio.median, r.ratio.lo,
        r.ratio.hi, r.overhead_us.median, r.flops / r.ours.median / 1e9, r.allocs_per_call,
        r.raw_allocs_per_call, r.ours_min / r.raw_min, r.impl.c_str(), r.raw_impl.c_str(),
        r.conv_only_ms > 0 ? (" (conv alone " + std::to_string(r.conv_only_ms) + " ms)").c_str()
                           : "");

  double peak1 = fma_peak_gflops(1), peakn = threads > 1 ? fma_peak_gflops(threads) : peak1;
  std::vector<Sgemm> big;
  big.push_back(bench_big(2048, quick ? 3 : 5));
  if (!quick) big.push_back(bench_big(4096, threads > 1 ? 4 : 3));
  std::printf(
      "\nFP32 peak (AVX-512 FMA register loop): %.1f GFLOP/s x1 thread, %.1f GFLOP/s x%d threads\n",
      peak1, peakn, threads);
  for (const auto& s : big)
    std::printf(
        "SGEMM %ld^3: ours best %.1f / median %.1f GFLOP/s, dnnl_sgemm best %.1f GFLOP/s; "
        "ours = %.1f%% of FMA peak (%d thr), %.1f%% of dnnl_sgemm\n",
        static_cast<long>(s.n), s.ours_best, s.ours_median, s.sgemm_best, 100 * s.ours_best / peakn,
        threads, 100 * s.ours_best / s.sgemm_best);

  if (!json_path.empty()) {
    nlohmann::json j;
    j["omp_num_threads"] = threads;
    j["fma_peak_gflops_1thread"] = peak1;
    j["fma_peak_gflops_nthreads"] = peakn;
    for (const auto& r : rows)
      j["rows"].push_back({{"name", r.name},
                           {"impl", r.impl},
                           {"raw_impl", r.raw_impl},
                           {"ours_ms", r.ours.median * 1e3},
                           {"raw_ms", r.raw.median * 1e3},
                           {"ours_ms_ci", {r.ours.lo * 1e3, r.ours.hi * 1e3}},
                           {"raw_ms_ci", {r.raw.lo * 1e3, r.raw.hi * 1e3}},
                           {"ratio", r.ratio.median},
                           {"ratio_ci", {r.ratio.lo, r.ratio.hi}},
                           {"overhead_us", r.overhead_us.median},
                           {"overhead_us_ci", {r.overhead_us.lo, r.overhead_us.hi}},
                           {"samples", r.samples},
                           {"calls_per_sample", r.calls_per_sample},
                           {"gflops_ours", r.flops / r.ours.median / 1e9},
                           {"conv_alone_ms", r.conv_only_ms},
                           {"allocs_per_call", r.allocs_per_call},
                           {"ours_min_ms", r.ours_min * 1e3},
                           {"raw_min_ms", r.raw_min * 1e3},
                           {"raw_allocs_per_call", r.raw_allocs_per_call}});
    for (const auto& s : big)
      j["sgemm"].push_back({{"n", s.n},
                            {"ours_best_gflops", s.ours_best},
                            {"ours_median_gflops", s.ours_median},
                            {"dnnl_sgemm_best_gflops", s.sgemm_best}});
    std::ofstream(json_path) << j.dump(1) << "\n";
  }
  return 0;
}
