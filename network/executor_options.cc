#include "network/executor_options.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "deep/error.h"
#include "deep/sizes.h"
#include "deep/text.h"
#include "operators/registry.h"

namespace deep500::network {

namespace {

bool equals_ignoring_case(const char* a, const char* b) {
  for (; *a && *b; ++a, ++b)
    if (std::tolower(static_cast<unsigned char>(*a)) !=
        std::tolower(static_cast<unsigned char>(*b)))
      return false;
  return *a == *b;
}

std::string text(bool v) {
  return v ? "true" : "false";
}
std::string text(int64_t v) {
  return std::to_string(v);
}
std::string text(int v) {
  return std::to_string(v);
}
std::string text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}
std::string text(const std::vector<std::string>& v) {
  return join(v);
}
std::string text(NodeThreads v) {
  return v == NodeThreads::team ? "team" : v == NodeThreads::cost_model ? "cost_model" : "measured";
}
std::string text(IdleThreads v) {
  return v == IdleThreads::sleep ? "sleep" : v == IdleThreads::spin ? "spin" : "from_environment";
}

void parse(const std::string& name, const std::string& v, bool& out) {
  DEEP500_CHECK(parse_bool(v, out), "setting ", name, ": expected true or false, got '", v, "'");
}
// The int settings are thread counts (executor.threads).
void parse(const std::string& name, const std::string& v, int& out) {
  int64_t i = 0;
  DEEP500_CHECK(parse_int(v, i), "setting ", name, ": expected a thread count, got '", v, "'");
  check_thread_count(i, "setting " + name);
  out = static_cast<int>(i);
}
void parse(const std::string& name, const std::string& v, int64_t& out) {
  DEEP500_CHECK(parse_int(v, out) && out > 0, "setting ", name,
                ": expected a positive integer, got '", v, "'");
}
void parse(const std::string& name, const std::string& v, double& out) {
  DEEP500_CHECK(parse_float(v, out) && out > 0 && out < 1e30, "setting ", name,
                ": expected a positive number, got '", v, "'");
}
void parse(const std::string& name, const std::string& v, std::vector<std::string>& out) {
  out.clear();
  if (!v.empty())
    for (const auto& b : split(v, ',')) {
      DEEP500_CHECK(!b.empty(), "setting ", name, ": empty backend name in '", v, "'");
      out.push_back(b);
    }
}
void parse(const std::string& name, const std::string& v, NodeThreads& out) {
  for (NodeThreads m : {NodeThreads::team, NodeThreads::cost_model, NodeThreads::measured})
    if (v == text(m)) return void(out = m);
  throw Error(cat("setting ", name, ": expected team, cost_model or measured, got '", v, "'"));
}
void parse(const std::string& name, const std::string& v, IdleThreads& out) {
  if (v == "sleep") return void(out = IdleThreads::sleep);
  if (v == "spin") return void(out = IdleThreads::spin);
  DEEP500_CHECK(v == "from_environment", "setting ", name,
                ": expected sleep, spin or from_environment, got '", v, "'");
  out = IdleThreads::from_environment;
}

struct Field {
  const char* name;
  std::function<std::string(const ExecutorOptions&)> get;
  std::function<void(ExecutorOptions&, const std::string&)> set;
};

// One row per field of ExecutorOptions, in declaration order.
template <class T>
Field field(const char* name, T ExecutorOptions::*member) {
  return {name, [member](const ExecutorOptions& o) { return text(o.*member); },
          [name, member](ExecutorOptions& o, const std::string& v) { parse(name, v, o.*member); }};
}
template <class T>
Field model_field(const char* name, T NodeThreadModel::*member) {
  return {name, [member](const ExecutorOptions& o) { return text(o.thread_model.*member); },
          [name, member](ExecutorOptions& o, const std::string& v) {
            parse(name, v, o.thread_model.*member);
          }};
}

const std::vector<Field>& fields() {
  static const std::vector<Field> all = {
      field("executor.backends", &ExecutorOptions::backends),
      field("executor.threads", &ExecutorOptions::threads),
      field("executor.strict_feed_shapes", &ExecutorOptions::strict_feed_shapes),
      field("executor.buffer_reuse", &ExecutorOptions::buffer_reuse),
      field("executor.fold_batchnorm", &ExecutorOptions::fold_batchnorm),
      field("executor.channels_last", &ExecutorOptions::channels_last),
      field("executor.fuse_post_ops", &ExecutorOptions::fuse_post_ops),
      field("executor.fuse_patterns", &ExecutorOptions::fuse_patterns),
      field("executor.node_threads", &ExecutorOptions::node_threads),
      model_field("executor.thread_model.wake_seconds", &NodeThreadModel::wake_seconds),
      model_field("executor.thread_model.spin_seconds", &NodeThreadModel::spin_seconds),
      model_field("executor.thread_model.flops_per_second", &NodeThreadModel::flops_per_second),
      model_field("executor.thread_model.bytes_per_second", &NodeThreadModel::bytes_per_second),
      model_field("executor.thread_model.break_even", &NodeThreadModel::break_even),
      model_field("executor.thread_model.trial_below_seconds",
                  &NodeThreadModel::trial_below_seconds),
      model_field("executor.thread_model.trials", &NodeThreadModel::trials),
      field("executor.idle_threads", &ExecutorOptions::idle_threads),
      field("executor.backward_hints", &ExecutorOptions::backward_hints),
      field("executor.max_loop_iterations", &ExecutorOptions::max_loop_iterations),
      field("executor.max_nesting_depth", &ExecutorOptions::max_nesting_depth),
      field("executor.release_model_constants", &ExecutorOptions::release_model_constants),
      {"executor.time_limit_seconds",
       [](const ExecutorOptions& o) { return text(o.time_limit_seconds); },
       [](ExecutorOptions& o, const std::string& v) {
         DEEP500_CHECK(parse_float(v, o.time_limit_seconds) && o.time_limit_seconds >= 0 &&
                           o.time_limit_seconds < 1e9,
                       "setting executor.time_limit_seconds: expected seconds >= 0 (0 = no limit), "
                       "got '",
                       v, "'");
       }},
  };
  return all;
}

}  // namespace

bool threads_sleep_when_idle() {
  if (const char* spin = std::getenv("GOMP_SPINCOUNT")) return std::strtod(spin, nullptr) == 0;
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy && equals_ignoring_case(policy, "passive");
}

ExecutorOptions resolved(ExecutorOptions options) {
  if (options.backends.empty()) options.backends = ops::Registry::global().default_preference();
  ops::Registry::global().check_backend_names(options.backends, "executor.backends");
  check_thread_count(options.threads, "executor.threads");
  DEEP500_CHECK(options.max_nesting_depth >= 1 && options.max_nesting_depth <= 10000,
                "executor.max_nesting_depth: expected 1..10000, got ", options.max_nesting_depth);
  DEEP500_CHECK(std::isfinite(options.time_limit_seconds) && options.time_limit_seconds >= 0,
                "executor.time_limit_seconds: expected seconds >= 0 (0 = no limit), got ",
                options.time_limit_seconds);
  if (options.idle_threads == IdleThreads::from_environment)
    options.idle_threads = threads_sleep_when_idle() ? IdleThreads::sleep : IdleThreads::spin;
  return options;
}

std::vector<std::pair<std::string, std::string>> settings_of(const ExecutorOptions& options) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : fields()) out.emplace_back(f.name, f.get(options));
  return out;
}

void set_option(ExecutorOptions& options, const std::string& name, const std::string& value) {
  const std::string full = name.rfind("executor.", 0) == 0 ? name : "executor." + name;
  std::string known;
  for (const auto& f : fields()) {
    if (full == f.name) return f.set(options, value);
    known += (known.empty() ? "" : ", ") + std::string(f.name);
  }
  throw Error(cat("unknown executor setting '", name, "' (expected one of: ", known, ")"));
}

}  // namespace deep500::network
