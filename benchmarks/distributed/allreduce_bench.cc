// Allreduce benchmarks of the Level 3 communicator, run under mpirun
// (docs/distributed.md):
//  * bus bandwidth (nccl-tests' definition: bytes / time * 2(p-1)/p) of
//    MpiCommunicator::allreduce against raw MPI_Allreduce on the same
//    buffer, sizes 4 KiB to 256 MiB, the two interleaved repetition by
//    repetition; the ratio is ours / raw bus bandwidth per repetition pair;
//  * --gradients resnet18: the ResNet-18 gradient set (62 tensors, 11.7 M
//    floats) allreduced per tensor against fused into the allreduce
//    scheme's buckets (distributed/schemes.h's FusionBuffer).
// A repetition's time is the slowest rank's (barrier before, max after).
// Rank 0 prints the table and writes --json.
//
//   mpirun -np 2 build/benchmarks/bench_allreduce [--sizes 4096,1048576] [--gradients resnet18]
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchmarks/bench_cli.h"
#include "distributed/mpi_communicator.h"
#include "distributed/schemes.h"
#include "metrics/statistics.h"

namespace {

using deep500::Tensor;
using deep500::distributed::Communicator;

struct Options {
  std::vector<int64_t> sizes;  // bytes
  int min_reps = 10;
  double min_time = 0.3;  // seconds per side and size
  std::string gradients;  // "" or resnet18
  std::string json;
};

// Seconds of one repetition on the slowest rank.
double timed(Communicator& comm, const std::function<void()>& op) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  op();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return s;
}

struct Pair {
  std::vector<double> a, b, ratio;  // seconds of each side; a / b per repetition
};

// Interleaved repetitions of `a` and `b` until both reached min_reps and min_time.
Pair interleave(Communicator& comm, const Options& o, const std::function<void()>& a,
                const std::function<void()>& b) {
  Pair p;
  timed(comm, a);  // warm-up
  timed(comm, b);
  double total_a = 0, total_b = 0;
  for (;;) {
    int done = static_cast<int>(p.a.size()) >= o.min_reps && total_a >= o.min_time &&
               total_b >= o.min_time;
    MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (done || p.a.size() >= 10000) break;
    p.a.push_back(timed(comm, a));
    p.b.push_back(timed(comm, b));
    total_a += p.a.back();
    total_b += p.b.back();
    p.ratio.push_back(p.a.back() / p.b.back());
  }
  return p;
}

nlohmann::json summary_json(const deep500::metrics::Summary& s) {
  return {{"median", s.median}, {"ci_low", s.ci_low}, {"ci_high", s.ci_high}, {"n", s.n}};
}

// nccl-tests' bus bandwidth, GB/s.
double bus_bandwidth(double bytes, double seconds, int p) {
  return bytes / seconds * 2.0 * (p - 1) / p / 1e9;
}

nlohmann::json bandwidth(Communicator& comm, const Options& o) {
  const int p = comm.size();
  nlohmann::json rows = nlohmann::json::array();
  if (comm.rank() == 0)
    std::printf("%12s %12s %12s %10s %10s %24s\n", "bytes", "raw us", "ours us", "raw GB/s",
                "ours GB/s", "ours/raw busbw [95% CI]");
  for (int64_t bytes : o.sizes) {
    Tensor x(deep500::DataType::Float, {bytes / 4});
    Tensor y = x.clone();
    const int count = static_cast<int>(bytes / 4);
    const Pair pair = interleave(
        comm, o, [&] { comm.allreduce(x); },
        [&] { MPI_Allreduce(MPI_IN_PLACE, y.raw(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); });
    // ratio = ours / raw seconds; bus bandwidth ratio is its inverse.
    std::vector<double> bw_ratio;
    for (double r : pair.ratio) bw_ratio.push_back(1 / r);
    const auto ours = deep500::metrics::summarize(pair.a),
               raw = deep500::metrics::summarize(pair.b),
               ratio = deep500::metrics::summarize(bw_ratio);
    if (comm.rank() == 0)
      std::printf("%12lld %12.1f %12.1f %10.3f %10.3f %10.3f [%.3f, %.3f]\n",
                  static_cast<long long>(bytes), raw.median * 1e6, ours.median * 1e6,
                  bus_bandwidth(bytes, raw.median, p), bus_bandwidth(bytes, ours.median, p),
                  ratio.median, ratio.ci_low, ratio.ci_high);
    rows.push_back({{"bytes", bytes},
                    {"raw_seconds", summary_json(raw)},
                    {"ours_seconds", summary_json(ours)},
                    {"raw_busbw_gbps", bus_bandwidth(bytes, raw.median, p)},
                    {"ours_busbw_gbps", bus_bandwidth(bytes, ours.median, p)},
                    {"busbw_ratio", summary_json(ratio)}});
  }
  return rows;
}

// ResNet-18's trainable tensors (torchvision): convolutions, batch-norm
// scales and shifts, the classifier.
std::vector<deep500::Shape> resnet18_gradient_shapes() {
  std::vector<deep500::Shape> s = {{64, 3, 7, 7}, {64}, {64}};
  int64_t in = 64;
  for (int64_t out : {64, 128, 256, 512})
    for (int block = 0; block < 2; ++block) {
      const int64_t first_in = block == 0 ? in : out;
      s.insert(s.end(), {{out, first_in, 3, 3}, {out}, {out}, {out, out, 3, 3}, {out}, {out}});
      if (block == 0 && in != out) s.insert(s.end(), {{out, in, 1, 1}, {out}, {out}});
      in = out;
    }
  s.insert(s.end(), {{1000, 512}, {1000}});
  return s;
}

nlohmann::json fused_against_per_tensor(Communicator& comm, const Options& o) {
  deep500::training::TensorMap grads;
  std::vector<std::string> names;
  int64_t floats = 0;
  const auto shapes = resnet18_gradient_shapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "g%03zu", i);
    names.emplace_back(name);
    grads[name] = Tensor(deep500::DataType::Float, shapes[i]);
    floats += grads[name].numel();
  }
  // The allreduce scheme's buckets: 1 MiB first, then 25 MiB, reverse order.
  std::vector<std::vector<std::string>> buckets(1);
  double filled = 0, limit = 1 << 20;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    const double b = static_cast<double>(grads[*it].nbytes());
    if (!buckets.back().empty() && filled + b > limit) {
      buckets.emplace_back();
      filled = 0;
      limit = 25.0 * (1 << 20);
    }
    buckets.back().push_back(*it);
    filled += b;
  }
  std::vector<deep500::distributed::FusionBuffer> fused(buckets.size());
  deep500::training::TensorMap averaged;  // the scheme's averaged gradients: views of the buckets
  const Pair pair = interleave(
      comm, o,
      [&] {
        for (auto& entry : grads)
          comm.allreduce(entry.second, deep500::distributed::ReduceOp::Mean);
      },
      [&] {
        for (size_t k = 0; k < buckets.size(); ++k) {
          fused[k].pack(buckets[k], grads);
          comm.allreduce(fused[k].buffer(), deep500::distributed::ReduceOp::Mean);
          fused[k].views_into(averaged);
        }
      });
  const auto per_tensor = deep500::metrics::summarize(pair.a),
             fused_s = deep500::metrics::summarize(pair.b),
             ratio = deep500::metrics::summarize(pair.ratio);
  if (comm.rank() == 0)
    std::printf(
        "ResNet-18 gradients (%zu tensors, %lld floats, %zu buckets): per tensor %.2f ms, fused "
        "%.2f ms, per-tensor / fused %.2f [%.2f, %.2f]\n",
        shapes.size(), static_cast<long long>(floats), buckets.size(), per_tensor.median * 1e3,
        fused_s.median * 1e3, ratio.median, ratio.ci_low, ratio.ci_high);
  return {{"tensors", shapes.size()},
          {"floats", floats},
          {"buckets", buckets.size()},
          {"per_tensor_seconds", summary_json(per_tensor)},
          {"fused_seconds", summary_json(fused_s)},
          {"per_tensor_over_fused", summary_json(ratio)}};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "allreduce of the deep500 communicator against raw MPI_Allreduce (run under mpirun)"};
  deep500::bench::one_line_errors(app, "bench_allreduce");
  app.add_option("--sizes", o.sizes, "message sizes in bytes (default 4 KiB to 256 MiB, x4)")
      ->delimiter(',');
  app.add_option("--min-reps", o.min_reps, "repetitions per side and size (default 10)");
  app.add_option("--min-time", o.min_time, "seconds per side and size (default 0.3)");
  app.add_option("--gradients", o.gradients, "also: fused against per-tensor (resnet18)")
      ->check(CLI::IsMember({"resnet18"}));
  app.add_option("--json", o.json, "rank 0 writes the results here");
  deep500::bench::parse_or_exit(app, argc, argv);
  if (o.sizes.empty())
    for (int64_t b = 4096; b <= (int64_t{256} << 20); b *= 4) o.sizes.push_back(b);
  for (int64_t b : o.sizes)
    if (b < 4 || b % 4 != 0) {
      std::fprintf(stderr, "bench_allreduce: --sizes %lld: expected a positive multiple of 4\n",
                   static_cast<long long>(b));
      return 2;
    }
  try {
    auto& comm = deep500::distributed::MpiCommunicator::world();
    nlohmann::json out = {{"ranks", comm.size()}, {"bandwidth", bandwidth(comm, o)}};
    if (!o.gradients.empty()) out["gradients"] = fused_against_per_tensor(comm, o);
    if (comm.rank() == 0 && !o.json.empty()) std::ofstream(o.json) << out.dump(1) << "\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_allreduce: %s\n", e.what());
    deep500::distributed::abort_job(2);
  }
  return 0;
}
