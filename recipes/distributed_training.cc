#include "recipes/distributed_training.h"

#include "deep/error.h"
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

std::unique_ptr<training::Sampler> make_sampler(const DistributedSetup& d, int64_t samples,
                                                const training::SamplerOptions& options) {
  if (!d.enabled()) return std::make_unique<training::ShuffledSampler>(samples, options);
  return std::make_unique<distributed::DistributedSampler>(samples, options, d.comm->rank(),
                                                           d.comm->size(), d.shard);
}

nlohmann::json rank_figures(const DistributedSetup& d, const distributed::DistributedOptimizer& opt,
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
  const double* v = all.data<double>();
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < d.comm->size(); ++r, v += mine.size())
    ranks.push_back({{"rank", r},
                     {"steps", static_cast<int64_t>(v[0])},
                     {"communication_seconds", v[1]},
                     {"local_step_seconds", v[2]},
                     {"training_seconds", v[3]},
                     {"bytes_sent", static_cast<int64_t>(v[4])},
                     {"bytes_received", static_cast<int64_t>(v[5])}});
  nlohmann::json staleness = nullptr;
  if (s.max_clock_gap >= 0)
    staleness = {{"max_clock_gap", s.max_clock_gap},
                 {"bound", d.scheme.staleness < 0 ? nlohmann::json(nullptr)
                                                  : nlohmann::json(d.scheme.staleness)},
                 {"mean_update_staleness", s.mean_update_staleness}};
  return {{"scheme", distributed::to_string(d.scheme)},
          {"overlapped_buckets", s.overlapped_buckets},
          {"staleness", staleness},
          {"shard", distributed::to_string(d.shard)},
          {"communicator", d.comm->name()},
          {"ranks", d.comm->size()},
          {"per_rank", ranks}};
}

}  // namespace deep500::recipes
