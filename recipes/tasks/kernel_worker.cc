#include "recipes/tasks/kernel_worker.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>

#include "deep/device_runtime.h"
#include "deep/error.h"
#include "deep/onnx_tensor.h"
#include "network/node_threads.h"
#include "operators/custom_op_loader.h"
#include "operators/registry.h"
#include "recipes/tasks/op_workload.h"
#include "recipes/tasks/operator_check.h"

namespace deep500::recipes {
namespace {

namespace fs = std::filesystem;

constexpr const char* kInputPrefix = "input:";
constexpr const char* kSettingPrefix = "setting:";
constexpr const char* kLibraryPrefix = "library:";

void put(onnx::ModelProto& m, const std::string& key, const std::string& value) {
  auto* p = m.add_metadata_props();
  p->set_key(key);
  p->set_value(value);
}

std::string flag(bool b) {
  return b ? "1" : "0";
}

// The job's metadata by key.
struct Metadata {
  std::vector<std::pair<std::string, std::string>> entries;
  std::string get(const std::string& key) const {
    for (const auto& [k, v] : entries)
      if (k == key) return v;
    throw Error(cat("kernel worker: the job has no '", key, "'"));
  }
  std::vector<std::pair<std::string, std::string>> with_prefix(const std::string& prefix) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [k, v] : entries)
      if (k.rfind(prefix, 0) == 0) out.push_back({k.substr(prefix.size()), v});
    return out;
  }
};

void apply_process_state(const Metadata& meta) {
  auto& registry = ops::Registry::global();
  for (const auto& [i, path] : meta.with_prefix(kLibraryPrefix))
    ops::load_custom_operators(path, registry);
  // Only what differs: some settings are fixed at build time and refuse any set.
  const auto current = registry.settings();
  for (const auto& [name, value] : meta.with_prefix(kSettingPrefix))
    if (std::find(current.begin(), current.end(), std::pair{name, value}) == current.end())
      registry.set_setting(name, value);
}

std::string run_first(const KernelJob& job) {
  network::ThreadScope threads(job.threads);
  ops::OpContext ctx{job.node, descs_of(job.inputs)};
  auto made = ops::Registry::global().create(ctx, {job.backend});
  DEEP500_CHECK(made.ok(), job.backend,
                " refused the kernel in the worker: ", made.ok() ? "" : made.refusal().reason);
  std::vector<Tensor> inputs;
  for (const auto& t : job.inputs) inputs.push_back(t.to(job.device));
  OpWorkload first(job.node, std::move(made.value()), std::move(inputs), "first run", job.backward,
                   job.seed);
  first.setup();
  first.run();
  if (!job.device.is_host())  // device errors surface when its work is done
    device_runtime(job.device).synchronize(job.device.index, current_stream(job.device));
  return "";
}

fs::path this_library_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&deep500_executable), &info) == 0 || !info.dli_fname)
    return {};
  return fs::path(info.dli_fname).parent_path();
}

}  // namespace

std::string encode_kernel_job(const KernelJob& job) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain(job.node.domain);
  opset->set_version(job.node.opset);
  auto* g = m.mutable_graph();
  *g->add_node() = ops::node_to_onnx(job.node);
  for (size_t i = 0; i < job.inputs.size(); ++i)
    if (job.inputs[i].defined())
      *g->add_initializer() = to_onnx(job.inputs[i].to(Device::host()), cat(kInputPrefix, i));
  put(m, "kind", job.kind == KernelJob::Kind::Check ? "check" : "first_run");
  put(m, "inputs", std::to_string(job.inputs.size()));
  put(m, "backend", job.backend);
  put(m, "backward", flag(job.backward));
  put(m, "device", to_string(job.device));
  put(m, "seed", std::to_string(job.seed));
  put(m, "threads", std::to_string(job.threads));
  put(m, "grad", flag(job.grad));
  put(m, "custom", flag(job.custom));
  const auto& registry = ops::Registry::global();
  for (const auto& [name, value] : registry.settings()) put(m, kSettingPrefix + name, value);
  const auto libraries = registry.plugins();
  for (size_t i = 0; i < libraries.size(); ++i) put(m, cat(kLibraryPrefix, i), libraries[i].first);
  std::string bytes;
  DEEP500_CHECK(m.SerializeToString(&bytes), "kernel worker: the job for ", job.node.describe(),
                " cannot be serialized");
  return bytes;
}

KernelJob decode_kernel_job(const std::string& bytes) {
  onnx::ModelProto m;
  DEEP500_CHECK(
      m.ParseFromString(bytes) && m.graph().node_size() == 1 && m.opset_import_size() == 1,
      "kernel worker: the request is not a kernel job");
  Metadata meta;
  for (const auto& p : m.metadata_props()) meta.entries.push_back({p.key(), p.value()});
  KernelJob job;
  job.kind = meta.get("kind") == "check" ? KernelJob::Kind::Check : KernelJob::Kind::FirstRun;
  job.node = ops::node_from_onnx(m.graph().node(0), static_cast<int>(m.opset_import(0).version()));
  job.inputs.resize(std::stoul(meta.get("inputs")));
  for (const auto& init : m.graph().initializer()) {
    const size_t i = std::stoul(init.name().substr(std::string(kInputPrefix).size()));
    DEEP500_CHECK(i < job.inputs.size(), "kernel worker: input ", i, " out of range");
    job.inputs[i] = from_onnx(init, init.name());
  }
  job.backend = meta.get("backend");
  job.backward = meta.get("backward") == "1";
  job.device = parse_device(meta.get("device"), "kernel worker device");
  job.seed = std::stoull(meta.get("seed"));
  job.threads = std::stoi(meta.get("threads"));
  job.grad = meta.get("grad") == "1";
  job.custom = meta.get("custom") == "1";
  return job;
}

std::string run_kernel_job_here(const KernelJob& job) {
  if (job.kind == KernelJob::Kind::FirstRun) return run_first(job);
  return encode_backend_checks(
      check_backend(job.node, job.inputs, job.backend, job.grad, job.custom));
}

ChildResult run_kernel_job(const KernelJob& job, double timeout_seconds) {
  static std::mutex mutex;
  static std::unique_ptr<WorkerProcess> worker;
  std::lock_guard<std::mutex> lock(mutex);
  if (!worker)
    worker = std::make_unique<WorkerProcess>(std::vector<std::string>{
        deep500_executable("run without isolation (--no-isolate) instead"), kKernelWorkerCommand});
  const std::string request = encode_kernel_job(job);
  bool started = false;
  ChildResult r = worker->run(request, timeout_seconds, &started);
  // A crash in a worker that earlier jobs ran in may be theirs: the job is
  // judged again in a fresh worker (the crashed one is gone).
  if (!r.completed && !r.threw_error && !started) r = worker->run(request, timeout_seconds);
  return r;
}

int kernel_worker_main() {
  return serve_worker([](const std::string& request) {
    onnx::ModelProto m;
    DEEP500_CHECK(m.ParseFromString(request), "kernel worker: the request is not a kernel job");
    Metadata meta;
    for (const auto& p : m.metadata_props()) meta.entries.push_back({p.key(), p.value()});
    apply_process_state(meta);  // before decoding: a plugin's operators need its library
    return run_kernel_job_here(decode_kernel_job(request));
  });
}

std::string deep500_executable(const std::string& instead) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && self.filename() == "deep500") return self.string();
  const fs::path dir = this_library_directory();
  std::vector<fs::path> tried;
  for (const fs::path& p : {dir / "deep500", dir / ".." / "bin" / "deep500"}) {
    tried.push_back(p.lexically_normal());
    if (access(p.c_str(), X_OK) == 0) return p.lexically_normal().string();
  }
  throw Error(cat("cannot find the deep500 executable to start anew (looked for ",
                  tried[0].string(), " and ", tried[1].string(), "); ", instead));
}

}  // namespace deep500::recipes
