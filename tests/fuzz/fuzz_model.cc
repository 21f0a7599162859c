// ONNX model bytes, end to end as `deep500 infer` takes them: parse and
// check (network/model.h), then one inference on small zero inputs with the
// reference executor and the optimized executor's plan (reference kernels).
// Any input is outputs or an Error. Limits keep one input bounded in time:
// Loops stop after 1000 iterations, an inference after 2 s.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "frameworks/register_all.h"
#include "network/model.h"
#include "network/optimized/optimized_executor.h"
#include "network/reference_executor.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

using namespace deep500;

// Zeros for every tensor input, symbolic dims as 1; nullopt when an input is
// not a tensor or too large for a quick run.
std::optional<std::map<std::string, Tensor>> small_feeds(const network::Model& m) {
  std::map<std::string, Tensor> feeds;
  std::set<std::string> initializers;
  for (const auto& init : m.graph().initializer()) initializers.insert(init.name());
  for (const auto& in : m.graph().input()) {
    if (initializers.count(in.name())) continue;
    if (!in.type().has_tensor_type()) return std::nullopt;
    const auto& tt = in.type().tensor_type();
    Shape shape;
    int64_t n = 1;
    for (const auto& d : tt.shape().dim()) {
      shape.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : 1);
      if (shape.back() > 4096 || (n *= std::max<int64_t>(shape.back(), 1)) > 65536)
        return std::nullopt;
    }
    auto dtype = static_cast<DataType>(tt.elem_type());
    if (!is_floating(dtype) && !is_integer(dtype) && dtype != DataType::Bool) return std::nullopt;
    feeds[in.name()] = Tensor(dtype, shape);
  }
  return feeds;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  frameworks::register_all();
  network::ExecutorOptions options;
  options.backends = {"reference"};
  options.max_loop_iterations = 1000;
  options.time_limit_seconds = 2;
  options.strict_feed_shapes = false;
  try {
    network::Model m =
        network::parse_model(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
    auto feeds = small_feeds(m);
    if (!feeds) return 0;
    try {
      network::ReferenceExecutor(m, options).run(*feeds);
    } catch (const Error&) {
    }
    network::OptimizedExecutor(m, options).inference(*feeds);
  } catch (const Error&) {
  }
  return 0;
}
