#include "training/data_loader.h"

#include <system_error>

#include "deep/error.h"
#include "deep/sizes.h"
#include "training/standard_samplers.h"

namespace deep500::training {

DataLoader::DataLoader(const Dataset& dataset, Sampler& sampler, DataLoaderOptions options)
    : dataset_(dataset), sampler_(sampler), opt_(std::move(options)) {
  check_thread_count(opt_.threads, "DataLoader threads");
  DEEP500_CHECK(opt_.threads == 0 || opt_.prefetch >= 1,
                "DataLoader: prefetch depth must be >= 1 with threads (got ", opt_.prefetch, ")");
  for (const auto& t : opt_.transforms) DEEP500_CHECK(t != nullptr, "DataLoader: null transform");
  consumed_ = sampler_.state();
  try {
    for (int i = 0; i < opt_.threads; ++i) workers_.emplace_back([this] { worker(); });
  } catch (const std::system_error& e) {
    stop_workers();  // the started ones: a joinable thread must not be destroyed
    throw Error(cat("DataLoader: could not start ", opt_.threads, " prefetch threads (started ",
                    workers_.size(), "): ", e.what()));
  }
}

DataLoader::~DataLoader() {
  stop_workers();
}

void DataLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

Batch DataLoader::build(const Job& job) const {
  Batch b = dataset_.batch(job.indices);
  if (!opt_.transforms.empty()) {
    Random rng(mix_seed(opt_.seed, static_cast<uint64_t>(job.at.epoch),
                        static_cast<uint64_t>(job.at.batch)));
    for (const auto& t : opt_.transforms) t->apply(b, rng);
  }
  return b;
}

std::shared_ptr<DataLoader::Job> DataLoader::draw() {
  auto job = std::make_shared<Job>();
  job->at = sampler_.state();
  job->indices = sampler_.next();
  job->after = sampler_.state();
  return job;
}

void DataLoader::worker() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !work_.empty(); });
      if (stop_) return;
      job = std::move(work_.front());
      work_.pop_front();
    }
    Batch b;
    std::exception_ptr err;
    try {
      b = build(*job);
    } catch (...) {
      err = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      job->batch = std::move(b);
      job->error = std::move(err);
      job->done = true;
      // Drop our reference here, so the consumer (not this thread) normally
      // destroys the job and the exception it may carry.
      job.reset();
    }
    done_cv_.notify_all();
  }
}

std::optional<Batch> DataLoader::next() {
  if (opt_.threads == 0) {
    std::shared_ptr<Job> job = draw();
    consumed_ = job->after;
    last_indices_ = job->indices;
    if (job->indices.empty()) return std::nullopt;
    return build(*job);
  }
  std::shared_ptr<Job> job;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Keep `prefetch` batches requested, without running past the epoch end.
    while (static_cast<int>(pending_.size()) < opt_.prefetch &&
           (pending_.empty() || !pending_.back()->indices.empty())) {
      auto j = draw();
      if (j->indices.empty()) {
        j->done = true;
      } else {
        work_.push_back(j);
        work_cv_.notify_one();
      }
      pending_.push_back(std::move(j));
    }
    job = pending_.front();
    done_cv_.wait(lock, [&] { return job->done; });
    pending_.pop_front();
  }
  consumed_ = job->after;
  last_indices_ = job->indices;
  if (job->error) std::rethrow_exception(job->error);
  if (job->indices.empty()) return std::nullopt;
  return std::move(job->batch);
}

void DataLoader::discard_pending() {
  std::lock_guard<std::mutex> lock(mu_);
  // Jobs already taken by a worker finish into orphaned Job objects.
  work_.clear();
  pending_.clear();
}

void DataLoader::restore(const SamplerState& s) {
  discard_pending();
  try {
    sampler_.restore(s);
  } catch (...) {
    sampler_.restore(consumed_);  // the prefetch had moved the sampler ahead
    throw;
  }
  consumed_ = s;
}

}  // namespace deep500::training
