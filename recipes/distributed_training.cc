#include "recipes/distributed_training.h"

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
