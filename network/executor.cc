#include "network/executor.h"

#include <algorithm>

#include "deep/error.h"
#include "deep/text.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "operators/registry.h"

namespace deep500::network {

void GraphExecutor::remove_events(ExecutorEvents* e) {
  events_.erase(std::remove(events_.begin(), events_.end(), e), events_.end());
}

ExecutorRegistry::ExecutorRegistry() : NamedRegistry("executor") {
  add("reference", [](const Model& m, const ExecutorOptions& o) {
    return std::unique_ptr<GraphExecutor>(std::make_unique<ReferenceExecutor>(m, o));
  });
  add("optimized", [](const Model& m, const ExecutorOptions& o) {
    return std::unique_ptr<GraphExecutor>(std::make_unique<OptimizedExecutor>(m, o));
  });
}

ExecutorRegistry& ExecutorRegistry::global() {
  static ExecutorRegistry r;
  return r;
}

void check_feed(const onnx::ValueInfoProto& vi, const Tensor& t, const std::string& model,
                bool check_shape) {
  if (!vi.type().has_tensor_type()) return;
  const auto& tt = vi.type().tensor_type();
  DEEP500_CHECK(tt.elem_type() == 0 || tt.elem_type() == static_cast<int>(t.dtype()), model,
                ": input '", vi.name(), "' expects element type ",
                name_of(static_cast<DataType>(tt.elem_type())), ", got ", name_of(t.dtype()));
  if (!check_shape || !tt.has_shape()) return;
  const auto& dims = tt.shape().dim();
  Shape declared;
  bool mismatch = dims.size() != t.rank();
  for (int i = 0; i < dims.size(); ++i) {
    declared.push_back(dims[i].has_dim_value() ? dims[i].dim_value() : -1);
    if (!mismatch && dims[i].has_dim_value() && dims[i].dim_value() != t.dim(i)) mismatch = true;
  }
  DEEP500_CHECK(!mismatch, model, ": input '", vi.name(), "' expects shape ", to_string(declared),
                " (-1 = any), got ", to_string(t.shape()));
}

void check_graph_output(const onnx::ValueInfoProto& vi, const Tensor& t, const std::string& model) {
  if (!vi.type().has_tensor_type() || !t.defined()) return;
  const int declared = vi.type().tensor_type().elem_type();
  DEEP500_CHECK(declared == 0 || declared == static_cast<int>(t.dtype()), model, ": graph output '",
                vi.name(), "' is declared ", name_of(static_cast<DataType>(declared)),
                ", computed ", name_of(t.dtype()));
}

std::vector<std::string> parameter_names(const Model& model) {
  std::vector<std::string> names;
  for (const auto& init : model.graph().initializer()) {
    auto t = static_cast<DataType>(init.data_type());
    if (is_floating(t)) names.push_back(init.name());
  }
  return names;
}

std::unique_ptr<GraphExecutor> make_executor(const std::string& spec, const Model& model,
                                             ExecutorOptions options) {
  const std::string prefix = "backend:";
  if (spec.rfind(prefix, 0) == 0) {
    options.backends.clear();
    for (const auto& b : split(spec.substr(prefix.size()), ','))
      if (!b.empty()) options.backends.push_back(b);
    DEEP500_CHECK(!options.backends.empty(), "executor '", spec,
                  "': expected backend:NAMES, e.g. backend:",
                  join(ops::Registry::global().default_preference()));
    return ExecutorRegistry::global().create("reference", model, options);
  }
  const auto& executors = ExecutorRegistry::global();
  const auto names = executors.names();
  const auto backends = ops::Registry::global().backends();
  if (std::find(names.begin(), names.end(), spec) == names.end() &&
      std::find(backends.begin(), backends.end(), spec) != backends.end())
    throw Error(cat("unknown executor '", spec, "': '", spec,
                    "' is a kernel backend; for the reference executor with it use backend:", spec,
                    ",reference"));
  return executors.create(spec, model, options);
}

}  // namespace deep500::network
