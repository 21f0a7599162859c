// Workload: anything measurable (an operator, a network inference, a training
// step, a collective), seen by the one timing loop (metrics/runner.h) as
// setup / run / teardown (ARCHITECTURE.md idea 4).
//
// Contract:
//  * The Runner calls setup() once, then run() for every warm-up and timed
//    repetition, then teardown() once (also when run() throws).
//  * run() performs exactly one repetition and does all the work that should
//    be timed; allocation and data preparation belong in setup().
//  * counters() describes one repetition; it is read after setup().
//  * A Workload is driven by one thread at a time; run() may use many
//    threads internally.
//  * device() says where run() does its work: the host (default), or a
//    device whose work run() enqueues on the thread's current stream
//    without waiting for it (the Runner times it there with events).
//  * Errors are deep500::Error exceptions; the Runner propagates them.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "deep/device.h"
#include "metrics/counters.h"

namespace deep500::metrics {

class Workload {
 public:
  virtual ~Workload() = default;
  virtual void setup() {}
  virtual void run() = 0;  // one repetition
  virtual void teardown() {}
  virtual Counters counters() const { return {}; }
  virtual std::string name() const { return "workload"; }
  virtual Device device() const { return Device::host(); }
};

// A host workload that calls a function once per repetition (a benchmark
// timing a library call or a lambda against another).
class CallableWorkload final : public Workload {
 public:
  CallableWorkload(std::string name, std::function<void()> run, Counters counters = {})
      : name_(std::move(name)), run_(std::move(run)), counters_(counters) {}
  void run() override { run_(); }
  Counters counters() const override { return counters_; }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  std::function<void()> run_;
  Counters counters_;
};

}  // namespace deep500::metrics
