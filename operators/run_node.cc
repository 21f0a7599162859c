#include "operators/run_node.h"

#include "deep/error.h"
#include "deep/random.h"

namespace deep500::ops {

std::vector<Tensor> random_inputs(const std::vector<TensorDesc>& descs, uint64_t seed, double lo,
                                  double hi) {
  Random rng(seed);
  std::vector<Tensor> out;
  for (const auto& d : descs) {
    if (d.dtype == DataType::Undefined) {
      out.emplace_back();
      continue;
    }
    DEEP500_CHECK(d.dtype != DataType::String, "random_inputs: string tensors are not supported");
    Tensor t(d);
    rng.fill_uniform(t, lo, hi);
    out.push_back(t);
  }
  return out;
}

OpContext context_for(const NodeSpec& node, const std::vector<Tensor>& inputs) {
  return OpContext{node, descs_of(inputs)};
}

std::vector<Tensor> run_node(const NodeSpec& node, const std::vector<Tensor>& inputs,
                             const std::string& backend, const Registry& registry,
                             std::string* implementation) {
  auto created = registry.create(context_for(node, inputs), {backend});
  if (!created.ok()) throw Error(created.refusal().reason);
  if (implementation) *implementation = created->implementation;
  std::vector<Tensor> outputs(node.outputs.size());
  created->op->forward(inputs, outputs);
  if (implementation) *implementation = created->ran_implementation();
  return outputs;
}

}  // namespace deep500::ops
