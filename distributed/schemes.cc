#include "distributed/schemes.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>

#include "deep/error.h"
#include "deep/text.h"
#include "distributed/allreduce_scheme.h"
#include "distributed/async_ps.h"

namespace deep500::distributed {

using training::TensorMap;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The value after "NAME:" as a positive number, or `fallback` without one.
double scheme_value(const std::string& text, size_t colon, double fallback, const std::string& what,
                    const char* meaning) {
  if (colon == std::string::npos) return fallback;
  const std::string v = text.substr(colon + 1);
  try {
    size_t used = 0;
    const double d = std::stod(v, &used);
    if (used == v.size() && d > 0 && d < 1e9) return d;
  } catch (const std::exception&) {
  }
  throw Error(cat(what, ": '", text, "': ", meaning, " must be a positive number, got '", v, "'"));
}

// ------------------------------------------------------- parameter server

class ParameterServerScheme : public DistributedOptimizer {
 public:
  ParameterServerScheme(Communicator& c, training::Optimizer& l, const SchemeOptions& o)
      : DistributedOptimizer(c, l), servers_(o.servers) {
    DEEP500_CHECK(servers_ >= 1 && servers_ <= c.size(), "ps: ", servers_,
                  " server ranks asked for, the job has ", c.size(), " ranks");
  }
  std::string scheme() const override { return "ps"; }

  void run_step(TensorMap& params, const TensorMap& grads) override {
    if (server_of_.size() != grads.size()) shard(grads);
    TensorMap mine_params, mine_grads;
    communicate([&] {
      for (const auto& [name, server] : server_of_) {
        Tensor g = grads.at(name).clone();
        comm_.reduce(g, ReduceOp::Mean, server);
        if (server == comm_.rank()) {
          mine_grads[name] = g;
          mine_params[name] = params.at(name);  // shares storage: updated in place
        }
      }
    });
    if (!mine_grads.empty()) local_step(mine_params, mine_grads);
    communicate([&] {
      for (const auto& [name, server] : server_of_) comm_.broadcast(params.at(name), server);
    });
  }

 private:
  // Largest parameter first onto the least loaded server; ties by name.
  void shard(const TensorMap& grads) {
    std::vector<std::pair<size_t, std::string>> by_size;
    for (const auto& entry : grads) by_size.emplace_back(entry.second.nbytes(), entry.first);
    std::stable_sort(by_size.begin(), by_size.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<size_t> load(static_cast<size_t>(servers_), 0);
    server_of_.clear();
    for (const auto& entry : by_size) {
      const int s = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      load[static_cast<size_t>(s)] += entry.first;
      server_of_[entry.second] = s;
    }
  }

  int servers_;
  std::map<std::string, int> server_of_;
};

// ---------------------------------------------------------- model averaging

// Tensor names by element type (each group fits one FusionBuffer).
std::map<DataType, std::vector<std::string>> names_by_type(const TensorMap& tensors) {
  std::map<DataType, std::vector<std::string>> out;
  for (const auto& entry : tensors) out[entry.second.dtype()].push_back(entry.first);
  return out;
}

// Mean of all parameters over every rank (fused per element type).
void average_parameters(Communicator& comm, TensorMap& params) {
  for (const auto& entry : names_by_type(params)) {
    FusionBuffer f;
    f.pack(entry.second, params);
    comm.allreduce(f.buffer(), ReduceOp::Mean);
    f.unpack_into(params);
  }
}

class LocalSgdScheme : public DistributedOptimizer {
 public:
  LocalSgdScheme(Communicator& c, training::Optimizer& l, const SchemeOptions& o)
      : DistributedOptimizer(c, l), every_(o.average_every) {}
  std::string scheme() const override { return cat("local-sgd:", every_); }

  void run_step(TensorMap& params, const TensorMap& grads) override {
    local_step(params, grads);
    if (stats_.steps % every_ == 0) communicate([&] { average_parameters(comm_, params); });
  }

 private:
  int every_;
};

// ------------------------------------------------------ neighbour averaging

class DpsgdScheme : public DistributedOptimizer {
 public:
  using DistributedOptimizer::DistributedOptimizer;
  std::string scheme() const override { return "dpsgd"; }

  void run_step(TensorMap& params, const TensorMap& grads) override {
    local_step(params, grads);
    const int p = comm_.size(), r = comm_.rank();
    if (p == 1) return;
    communicate([&] {
      for (const auto& entry : names_by_type(params)) {
        FusionBuffer mine;
        mine.pack(entry.second, params);
        Tensor& x = mine.buffer();
        const int left = (r + p - 1) % p, right = (r + 1) % p;
        // Neighbourhood values by rank, summed in rank order: every rank of
        // a neighbourhood adds the same values in the same order.
        std::map<int, Tensor> by_rank = {{r, x}};
        by_rank[left] = Tensor(x.dtype(), x.shape());
        comm_.sendrecv(x, right, by_rank[left], left, 1);
        if (left != right) {  // a ring of two has one neighbour
          by_rank[right] = Tensor(x.dtype(), x.shape());
          comm_.sendrecv(x, left, by_rank[right], right, 2);
        }
        Tensor acc = by_rank.begin()->second.clone();
        for (auto it = std::next(by_rank.begin()); it != by_rank.end(); ++it)
          reduce_into(acc.raw(), it->second.raw(), acc.numel(), acc.dtype(), ReduceOp::Sum);
        divide(acc.raw(), acc.numel(), acc.dtype(), static_cast<int>(by_rank.size()));
        x.copy_from(acc);
        mine.unpack_into(params);
      }
    });
  }
};

}  // namespace

// ------------------------------------------------------------------ common

std::vector<std::string> scheme_names() {
  return {"allreduce", "ps", "local-sgd", "dpsgd", "async-ps", "ssp"};
}

SchemeOptions parse_scheme(const std::string& text, const std::string& what) {
  const size_t colon = text.find(':');
  SchemeOptions o;
  o.name = text.substr(0, colon);
  if (o.name == "allreduce") {
    std::string rest = text;
    const std::string flag = ":overlap";
    if (rest.size() > flag.size() &&
        rest.compare(rest.size() - flag.size(), flag.size(), flag) == 0) {
      o.overlap = true;
      rest.resize(rest.size() - flag.size());
    }
    o.bucket_mib = scheme_value(rest, rest.find(':'), o.bucket_mib, what, "the bucket size (MiB)");
  } else if (o.name == "ps") {
    const double s = scheme_value(text, colon, 1, what, "the server count");
    DEEP500_CHECK(s == static_cast<int>(s), what, ": '", text, "': the server count must be an ",
                  "integer");
    o.servers = static_cast<int>(s);
  } else if (o.name == "local-sgd") {
    const double k = scheme_value(text, colon, 1, what, "the averaging period K");
    DEEP500_CHECK(k == static_cast<int>(k), what, ": '", text, "': K must be an integer");
    o.average_every = static_cast<int>(k);
  } else if (o.name == "dpsgd" || o.name == "async-ps") {
    DEEP500_CHECK(colon == std::string::npos, what, ": '", text, "': ", o.name, " takes no value");
  } else if (o.name == "ssp") {
    DEEP500_CHECK(colon != std::string::npos, what, ": '", text,
                  "': ssp needs its staleness bound, e.g. ssp:2");
    const std::string v = text.substr(colon + 1);
    int64_t bound = -1;
    DEEP500_CHECK(parse_int(v, bound) && bound >= 0 && bound <= 1000000, what, ": '", text,
                  "': the staleness bound must be an integer >= 0, got '", v, "'");
    o.staleness = static_cast<int>(bound);
  } else {
    throw Error(cat(what, ": unknown scheme '", o.name,
                    "': expected allreduce[:BUCKET_MIB][:overlap], ",
                    "ps[:SERVERS], local-sgd[:K], dpsgd, async-ps or ssp:S"));
  }
  return o;
}

std::string to_string(const SchemeOptions& o) {
  if (o.name == "allreduce") return cat("allreduce:", o.bucket_mib, o.overlap ? ":overlap" : "");
  if (o.name == "ps") return cat("ps:", o.servers);
  if (o.name == "local-sgd") return cat("local-sgd:", o.average_every);
  if (o.name == "ssp") return cat("ssp:", o.staleness);
  return o.name;
}

DistributedOptimizer::DistributedOptimizer(Communicator& comm, training::Optimizer& local)
    : comm_(comm), local_(local) {}

std::string DistributedOptimizer::name() const {
  return cat(scheme(), "(", local_.name(), ")");
}

void DistributedOptimizer::communicate(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  stats_.communication_seconds += seconds_since(start);
}

void DistributedOptimizer::local_step(TensorMap& params, const TensorMap& grads) {
  const auto start = std::chrono::steady_clock::now();
  local_.step(params, grads);
  stats_.local_step_seconds += seconds_since(start);
}

namespace {

// x *= numerator / denominator, element by element (float or double).
void rescale(Tensor& x, int numerator, int denominator) {
  const double f = static_cast<double>(numerator) / denominator;
  if (x.dtype() == DataType::Float)
    for (float *v = x.data<float>(), *end = v + x.numel(); v != end; ++v)
      *v = static_cast<float>(*v * f);
  else if (x.dtype() == DataType::Double)
    for (double *v = x.data<double>(), *end = v + x.numel(); v != end; ++v) *v *= f;
  else
    throw Error(cat("mean-divisor: cannot scale ", name_of(x.dtype()), " gradients"));
}

}  // namespace

void DistributedOptimizer::step(TensorMap& params, const TensorMap& grads) {
  ++stats_.steps;
  steps_ = stats_.steps;
  if (!planted_.alters_gradients()) return run_step(params, grads);
  TensorMap sent;
  for (const auto& [name, g] : grads) {
    Tensor x = g.clone();
    if (planted_.gradient_dropped == comm_.rank()) std::memset(x.raw(), 0, x.nbytes());
    if (planted_.mean_divisor > 0) rescale(x, comm_.size(), planted_.mean_divisor);
    sent[name] = std::move(x);
  }
  run_step(params, sent);
}

void DistributedOptimizer::plant(const training::PlantedBugs& bugs) {
  check_planted_bugs(bugs, comm_.size(), parse_scheme(scheme(), "scheme"), "planted_bugs");
  planted_ = bugs;
}

void check_planted_bugs(const training::PlantedBugs& bugs, int ranks, const SchemeOptions& scheme,
                        const std::string& what) {
  DEEP500_CHECK(!bugs.alters_gradients() || ranks > 1, what,
                ": gradient-dropped and mean-divisor are bugs of distributed runs (",
                "training.distributed)");
  DEEP500_CHECK(bugs.gradient_dropped < ranks, what, ": gradient-dropped:", bugs.gradient_dropped,
                ": the job has ranks 0-", ranks - 1);
  DEEP500_CHECK(bugs.mean_divisor == 0 || scheme.name == "allreduce" || scheme.name == "ps", what,
                ": mean-divisor is a bug of the schemes that average gradients (allreduce, ps), ",
                "not of ", scheme.name);
}

void DistributedOptimizer::synchronize(TensorMap& params) {
  // Every rank must hold the same parameter set: compare counts and sizes.
  int64_t bytes = 0;
  for (const auto& entry : params) bytes += static_cast<int64_t>(entry.second.nbytes());
  const std::vector<int64_t> mine = {static_cast<int64_t>(params.size()), bytes};
  Tensor lo = Tensor::from_vector<int64_t>({2}, mine), hi = lo.clone();
  communicate([&] {
    comm_.allreduce(lo, ReduceOp::Min);
    comm_.allreduce(hi, ReduceOp::Max);
  });
  DEEP500_CHECK(lo.to_int64_vector() == hi.to_int64_vector(), "rank ", comm_.rank(),
                ": the ranks hold different parameter sets (", params.size(), " parameters, ",
                bytes, " bytes here; counts ", lo.at_as_double(0), "..", hi.at_as_double(0),
                ", bytes ", lo.at_as_double(1), "..", hi.at_as_double(1), " across ranks)");
  TensorMap state = local_.state();
  Tensor entries = Tensor::from_vector<int64_t>({1}, {static_cast<int64_t>(state.size())});
  communicate([&] {
    for (auto& entry : params) comm_.broadcast(entry.second, 0);
    comm_.broadcast(entries, 0);
  });
  if (entries.at_as_double(0) == 0) return;
  DEEP500_CHECK(static_cast<double>(state.size()) == entries.at_as_double(0), "rank ", comm_.rank(),
                ": optimizer state has ", state.size(), " entries, rank 0's ",
                entries.at_as_double(0), " (resume every rank from the same checkpoint)");
  communicate([&] {
    for (auto& entry : state) comm_.broadcast(entry.second, 0);
  });
  if (comm_.rank() != 0) local_.load_state(state);
}

std::unique_ptr<DistributedOptimizer> make_scheme(const SchemeOptions& o, Communicator& comm,
                                                  training::Optimizer& local) {
  if (o.name == "allreduce") return make_allreduce_scheme(comm, local, o);
  if (o.name == "ps") return std::make_unique<ParameterServerScheme>(comm, local, o);
  if (o.name == "local-sgd") return std::make_unique<LocalSgdScheme>(comm, local, o);
  if (o.name == "dpsgd") return std::make_unique<DpsgdScheme>(comm, local);
  if (o.name == "async-ps") return make_async_ps(comm, local, -1);
  if (o.name == "ssp") return make_async_ps(comm, local, o.staleness);
  throw Error(
      cat("unknown distributed scheme '", o.name, "': expected ", join(scheme_names(), ", ")));
}

// ------------------------------------------------------------ FusionBuffer

void FusionBuffer::pack(const std::vector<std::string>& names, const TensorMap& from) {
  if (names != names_) {
    names_ = names;
    offsets_.clear();
    shapes_.clear();
    int64_t total = 0;
    DataType type = DataType::Undefined;
    for (const auto& n : names) {
      const Tensor& t = from.at(n);
      DEEP500_CHECK(type == DataType::Undefined || t.dtype() == type, "fusion buffer: '", n,
                    "' is ", name_of(t.dtype()), ", the others ", name_of(type));
      type = t.dtype();
      offsets_.push_back(total);
      shapes_.push_back(t.shape());
      total += t.numel();
    }
    offsets_.push_back(total);
    buffer_ = Tensor(type, {total});
  }
  auto* out = static_cast<unsigned char*>(buffer_.raw());
  const size_t elem = size_of(buffer_.dtype());
  for (size_t i = 0; i < names.size(); ++i) {
    const Tensor& t = from.at(names[i]);
    DEEP500_CHECK(t.shape() == shapes_[i], "fusion buffer: '", names[i], "' changed shape");
    std::memcpy(out + offsets_[i] * elem, t.raw(), t.nbytes());
  }
}

void FusionBuffer::unpack_into(TensorMap& to) const {
  const auto* in = static_cast<const unsigned char*>(buffer_.raw());
  const size_t elem = size_of(buffer_.dtype());
  for (size_t i = 0; i < names_.size(); ++i) {
    Tensor& t = to[names_[i]];
    if (!t.defined() || t.shape() != shapes_[i]) t = Tensor(buffer_.dtype(), shapes_[i]);
    std::memcpy(t.raw(), in + offsets_[i] * elem, t.nbytes());
  }
}

void FusionBuffer::views_into(TensorMap& to) const {
  for (size_t i = 0; i < names_.size(); ++i)
    to[names_[i]] = buffer_.slice(offsets_[i], offsets_[i + 1]).view(shapes_[i]);
}

}  // namespace deep500::distributed
