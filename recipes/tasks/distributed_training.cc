#include "recipes/tasks/distributed_training.h"

#include <algorithm>
#include <cstring>

#include "deep/error.h"
#include "deep/text.h"
#include "training/standard_samplers.h"

namespace deep500::recipes {

DistributedSetup distributed_setup(distributed::Communicator* comm, const std::string& scheme,
                                   const std::string& shard) {
  DistributedSetup d;
  d.comm = comm;
  if (!comm) return d;
  d.scheme = distributed::parse_scheme(scheme, "--distributed " + scheme);
  d.shard = distributed::parse_shard_mode(shard, "--shard");
  return d;
}

void check_same_configuration(const DistributedSetup& d,
                              const std::vector<std::pair<std::string, std::string>>& fields) {
  if (!d.enabled()) return;
  std::string mine;
  for (const auto& [field, value] : fields) mine += field + '\t' + value + '\n';
  Tensor bytes(DataType::UInt8, {static_cast<int64_t>(mine.size())});
  if (!mine.empty()) std::memcpy(bytes.raw(), mine.data(), mine.size());
  Tensor all;
  const std::vector<int64_t> counts = d.comm->allgatherv(bytes, all);
  const char* at = static_cast<const char*>(all.raw());
  std::vector<std::string> texts;
  for (int64_t n : counts) {
    texts.emplace_back(at, static_cast<size_t>(n));
    at += n;
  }
  for (int r = 1; r < d.comm->size(); ++r) {
    if (texts[r] == texts[0]) continue;
    const auto a = split(texts[0], '\n'), b = split(texts[r], '\n');
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
      const std::string x = i < a.size() ? a[i] : "", y = i < b.size() ? b[i] : "";
      if (x == y) continue;
      const auto field = split(x.empty() ? y : x, '\t')[0];
      auto value = [](const std::string& line) {
        const auto tab = line.find('\t');
        return tab == std::string::npos ? std::string("(none)") : line.substr(tab + 1);
      };
      throw Error(cat("the ranks run different configurations: rank ", r, " has ", field, " = ",
                      value(y), ", rank 0 has ", value(x),
                      " (every rank must be started with the same options)"));
    }
  }
}

std::unique_ptr<training::Sampler> make_sampler(const DistributedSetup& d, int64_t samples,
                                                const training::SamplerOptions& options) {
  if (!d.enabled()) return std::make_unique<training::ShuffledSampler>(samples, options);
  return std::make_unique<distributed::DistributedSampler>(samples, options, d.comm->rank(),
                                                           d.comm->size(), d.shard);
}

DistributedFigures rank_figures(const DistributedSetup& d,
                                const distributed::DistributedOptimizer& opt,
                                const training::TrainingReport& report) {
  const auto& s = opt.stats();
  const auto traffic = opt.traffic();
  const std::vector<double> mine = {static_cast<double>(s.steps),
                                    s.communication_seconds,
                                    s.local_step_seconds,
                                    report.seconds,
                                    static_cast<double>(traffic.bytes_sent),
                                    static_cast<double>(traffic.bytes_received)};
  Tensor all;
  d.comm->allgather(Tensor::from_vector<double>({static_cast<int64_t>(mine.size())}, mine), all);
  DistributedFigures f;
  const double* v = all.data<double>();
  for (int r = 0; r < d.comm->size(); ++r, v += mine.size())
    f.per_rank.push_back({static_cast<int64_t>(v[0]), v[1], v[2], v[3], static_cast<int64_t>(v[4]),
                          static_cast<int64_t>(v[5])});
  f.scheme = distributed::to_string(d.scheme);
  f.shard = distributed::to_string(d.shard);
  f.communicator = d.comm->name();
  f.ranks = d.comm->size();
  f.overlapped_buckets = s.overlapped_buckets;
  f.has_staleness = s.max_clock_gap >= 0;
  f.max_clock_gap = s.max_clock_gap;
  f.mean_update_staleness = s.mean_update_staleness;
  f.staleness_bound = d.scheme.staleness;
  return f;
}

double DistributedFigures::communication_seconds() const {
  double slowest = 0;
  for (const auto& r : per_rank) slowest = std::max(slowest, r.communication_seconds);
  return slowest;
}

double DistributedFigures::compute_seconds() const {
  if (per_rank.empty()) return 0;
  return per_rank[0].training_seconds - per_rank[0].communication_seconds;
}

double DistributedFigures::communication_bytes() const {
  double bytes = 0;
  for (const auto& r : per_rank) bytes += static_cast<double>(r.bytes_sent);
  return bytes;
}

void GlobalEpochTotals::after_training_set(training::TrainingState& s) {
  if (s.batch < s.batches_per_epoch) return;  // stopped within the epoch
  Tensor totals =
      Tensor::from_vector<double>({3}, {s.epoch_loss_sum, static_cast<double>(s.epoch_correct),
                                        static_cast<double>(s.epoch_samples)});
  comm_.allreduce(totals, distributed::ReduceOp::Sum);
  const double* t = totals.data<double>();
  s.epoch_loss_sum = t[0];
  s.epoch_correct = static_cast<int64_t>(t[1]);
  s.epoch_samples = static_cast<int64_t>(t[2]);
}

nlohmann::json to_json(const DistributedFigures& f) {
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t r = 0; r < f.per_rank.size(); ++r) {
    const RankFigures& x = f.per_rank[r];
    ranks.push_back({{"rank", r},
                     {"steps", x.steps},
                     {"communication_seconds", x.communication_seconds},
                     {"local_step_seconds", x.local_step_seconds},
                     {"training_seconds", x.training_seconds},
                     {"bytes_sent", x.bytes_sent},
                     {"bytes_received", x.bytes_received}});
  }
  nlohmann::json staleness = nullptr;
  if (f.has_staleness)
    staleness = {{"max_clock_gap", f.max_clock_gap},
                 {"bound", f.staleness_bound < 0 ? nlohmann::json(nullptr)
                                                 : nlohmann::json(f.staleness_bound)},
                 {"mean_update_staleness", f.mean_update_staleness}};
  return {{"scheme", f.scheme},
          {"overlapped_buckets", f.overlapped_buckets},
          {"staleness", staleness},
          {"shard", f.shard},
          {"communicator", f.communicator},
          {"ranks", f.ranks},
          {"per_rank", ranks}};
}

}  // namespace deep500::recipes
