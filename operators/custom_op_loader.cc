#include "operators/custom_op_loader.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <map>

#include <onnx/defs/schema.h>

#include "operators/attribute_text.h"
#include "operators/custom_op_abi.h"

namespace deep500::ops {
namespace {

deep500_tensor describe(DataType dtype, const Shape& shape, const void* data, Device device) {
  deep500_tensor d{};
  d.dtype = static_cast<int32_t>(dtype);
  d.rank = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size() && i < DEEP500_MAX_RANK; ++i) d.shape[i] = shape[i];
  d.data = const_cast<void*>(data);
  d.device_type = device.is_host() ? DEEP500_DEVICE_HOST : DEEP500_DEVICE_CUDA;
  d.device_index = device.index;
  return d;
}

// A host tensor (raw() refuses device bytes: custom operators are host
// kernels).
deep500_tensor describe(const Tensor& t) {
  if (!t.defined()) return deep500_tensor{};
  return describe(t.dtype(), t.shape(), t.raw(), t.device());
}

// A version-1 library's tensor: version 2 without the device fields.
struct TensorV1 {
  int32_t dtype;
  int32_t rank;
  int64_t shape[DEEP500_MAX_RANK];
  void* data;
};
static_assert(sizeof(TensorV1) == offsetof(deep500_tensor, device_type));

// The tensors of one ABI call, laid out for the library's ABI version.
class TensorList {
 public:
  explicit TensorList(uint32_t abi_version, std::vector<deep500_tensor> items = {})
      : v1_(abi_version == 1), items_(std::move(items)) {}
  std::vector<deep500_tensor>& items() { return items_; }
  // The array to pass to the library.
  deep500_tensor* abi() {
    if (!v1_) return items_.data();
    legacy_.resize(items_.size());
    for (size_t i = 0; i < items_.size(); ++i)
      std::memcpy(&legacy_[i], &items_[i], sizeof(TensorV1));
    return reinterpret_cast<deep500_tensor*>(legacy_.data());
  }
  // After a call that wrote the array (infer): what it wrote.
  void read_back() {
    if (v1_)
      for (size_t i = 0; i < items_.size(); ++i)
        std::memcpy(&items_[i], &legacy_[i], sizeof(TensorV1));
  }

 private:
  bool v1_;
  std::vector<deep500_tensor> items_;
  std::vector<TensorV1> legacy_;
};

// Calls the library's create() with the node's attributes as text and the
// input descriptors. A failure is bad input (Error naming the node) for an
// operator of the plugin's own; for an ONNX operator the plugin implements
// (`builtin`), the node is valid ONNX, so it is a refusal (Unsupported): the
// registry tries the next backend and checks mark the case refused.
void* create_instance(const deep500_custom_op_def* def, const OpContext& ctx,
                      const std::string& node, bool builtin) {
  DEEP500_CHECK(static_cast<int32_t>(ctx.num_inputs()) == def->num_inputs, node, ": expected ",
                def->num_inputs, " inputs, got ", ctx.num_inputs());
  std::vector<std::string> names, values;
  for (const auto& [name, a] : ctx.node.attributes.all()) {
    names.push_back(name);
    values.push_back(attribute_value_text(a));
  }
  std::vector<deep500_attribute> attrs;
  for (size_t i = 0; i < names.size(); ++i) attrs.push_back({names[i].c_str(), values[i].c_str()});
  TensorList descs(def->abi_version);
  for (const auto& d : ctx.inputs)
    descs.items().push_back(describe(d.dtype, d.shape, nullptr, Device::host()));
  char err[512] = "";
  void* self =
      def->create(attrs.data(), static_cast<int32_t>(attrs.size()), descs.abi(), err, sizeof err);
  const std::string why = cat(node, ": ", err[0] ? err : "custom create() failed");
  if (!self && builtin) throw Unsupported(why);
  if (!self) throw Error(why);
  return self;
}

bool is_onnx_operator(const std::string& domain, const std::string& op_type) {
  return onnx::OpSchemaRegistry::Schema(op_type, domain) != nullptr;
}

// Built by ops::make_factory (registry.h's refusal contract): the ABI's rank
// limit is a refusal, so the registry tries the next backend.
class CustomOperator final : public Operator {
 public:
  static std::string refusal(const OpContext& ctx) {
    for (const auto& d : ctx.inputs)
      if (d.shape.size() > DEEP500_MAX_RANK)
        return cat("rank ", d.shape.size(), " exceeds the custom-op ABI limit of ",
                   DEEP500_MAX_RANK);
    return "";
  }
  CustomOperator(const OpContext& ctx, const deep500_custom_op_def* def, bool builtin)
      : def_(def), node_(ctx.node.describe()), self_(create_instance(def, ctx, node_, builtin)) {}
  CustomOperator(const CustomOperator&) = delete;
  CustomOperator& operator=(const CustomOperator&) = delete;
  ~CustomOperator() override {
    if (def_->destroy) def_->destroy(self_);
  }

  void forward(std::span<const Tensor> in, std::span<Tensor> out) override {
    TensorList inputs = describe_all(in);
    TensorList outputs(def_->abi_version,
                       std::vector<deep500_tensor>(static_cast<size_t>(def_->num_outputs)));
    char err[512] = "";
    DEEP500_CHECK(def_->infer(self_, inputs.abi(), outputs.abi(), err, sizeof err) == 0, node_,
                  ": custom infer failed: ", err);
    outputs.read_back();
    auto& outs = outputs.items();
    for (size_t i = 0; i < outs.size(); ++i) {
      DEEP500_CHECK(outs[i].rank >= 0 && outs[i].rank <= DEEP500_MAX_RANK, node_,
                    ": custom infer reported rank ", outs[i].rank, " for output ", i);
      Shape shape(outs[i].shape, outs[i].shape + outs[i].rank);
      Tensor& t = ensure_output(out, i, static_cast<DataType>(outs[i].dtype), shape);
      outs[i] = describe(t);
    }
    DEEP500_CHECK(def_->forward(self_, inputs.abi(), outputs.abi(), err, sizeof err) == 0, node_,
                  ": custom forward failed: ", err);
  }

  bool has_backward() const override { return def_->backward != nullptr; }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    return std::vector<bool>(n, def_->backward != nullptr);
  }
  void backward(std::span<const Tensor> gy, std::span<const Tensor> in, std::span<const Tensor> y,
                std::span<Tensor> gx) override {
    DEEP500_CHECK(def_->backward, node_, ": custom operator has no backward");
    std::vector<Tensor> zero_grads;  // undefined output gradients become zeros
    TensorList g(def_->abi_version);
    for (size_t i = 0; i < gy.size(); ++i) {
      if (gy[i].defined()) {
        g.items().push_back(describe(gy[i]));
      } else {
        zero_grads.emplace_back(y[i].dtype(), y[i].shape());
        g.items().push_back(describe(zero_grads.back()));
      }
    }
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].defined()) gx[i] = Tensor(in[i].dtype(), in[i].shape());
    TensorList inputs = describe_all(in), outputs = describe_all(y), grads = describe_all(gx);
    char err[512] = "";
    DEEP500_CHECK(def_->backward(self_, g.abi(), inputs.abi(), outputs.abi(), grads.abi(), err,
                                 sizeof err) == 0,
                  node_, ": custom backward failed: ", err);
  }

  // The one exception to the cost model (cost_model.h): only the library
  // knows its operator's FLOPs.
  std::optional<double> declared_flops(std::span<const TensorDesc> in) const override {
    if (!def_->flops) return std::nullopt;
    TensorList d(def_->abi_version);
    for (const auto& t : in)
      d.items().push_back(describe(t.dtype, t.shape, nullptr, Device::host()));
    return def_->flops(self_, d.abi());
  }

 private:
  TensorList describe_all(std::span<const Tensor> ts) const {
    TensorList d(def_->abi_version);
    for (const auto& t : ts) d.items().push_back(describe(t));
    return d;
  }
  const deep500_custom_op_def* def_;
  std::string node_;  // before self_: create_instance() names the node
  void* self_ = nullptr;
};

std::mutex loaded_mutex;
std::map<std::string, const deep500_custom_op_def*> loaded;  // "domain::op_type"
std::map<std::string, CustomOpSignature> declared;           // by declare_custom_operator

}  // namespace

std::optional<CustomOpSignature> find_custom_operator(const std::string& domain,
                                                      const std::string& op_type) {
  std::lock_guard<std::mutex> lock(loaded_mutex);
  const std::string key = domain + "::" + op_type;
  if (auto it = loaded.find(key); it != loaded.end())
    return CustomOpSignature{it->second->num_inputs, it->second->num_outputs};
  if (auto it = declared.find(key); it != declared.end()) return it->second;
  return std::nullopt;
}

void declare_custom_operator(const std::string& domain, const std::string& op_type,
                             CustomOpSignature signature) {
  DEEP500_CHECK(!op_type.empty(), "custom operator: empty op_type");
  DEEP500_CHECK(signature.inputs >= 0 && signature.inputs <= 1024 && signature.outputs >= 1 &&
                    signature.outputs <= 1024,
                domain, "::", op_type,
                ": a custom operator takes 0-1024 inputs and 1-1024 "
                "outputs, got ",
                signature.inputs, " and ", signature.outputs);
  std::lock_guard<std::mutex> lock(loaded_mutex);
  declared[domain + "::" + op_type] = signature;
}

std::vector<std::string> load_custom_operators(const std::string& path, Registry& registry) {
  std::lock_guard<std::mutex> lock(loaded_mutex);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  DEEP500_CHECK(handle, path, ": cannot load custom operator library: ", dlerror());
  auto fn = reinterpret_cast<deep500_custom_ops_fn>(dlsym(handle, "deep500_custom_ops"));
  DEEP500_CHECK(fn, path,
                ": no exported function 'deep500_custom_ops' (expected a library built "
                "against operators/custom_op_abi.h)");
  const deep500_custom_op_def* defs = nullptr;
  int32_t n = fn(&defs);
  DEEP500_CHECK(n >= 0 && (n == 0 || defs), path, ": deep500_custom_ops returned ", n,
                " definitions");
  auto build_type =
      reinterpret_cast<deep500_plugin_build_type_fn>(dlsym(handle, "deep500_plugin_build_type"));
  const char* declared = build_type ? build_type() : nullptr;
  registry.add_plugin(std::filesystem::absolute(path).lexically_normal().string(),
                      declared && *declared ? declared : "unknown");
  std::vector<std::string> names;
  for (int32_t i = 0; i < n; ++i) {
    const auto* d = &defs[i];
    DEEP500_CHECK(d->abi_version == 1 || d->abi_version == DEEP500_CUSTOM_OP_ABI_VERSION, path,
                  ": operator #", i, " was built for custom-op ABI version ", d->abi_version,
                  ", expected 1 to ", DEEP500_CUSTOM_OP_ABI_VERSION);
    DEEP500_CHECK(d->op_type && d->create && d->infer && d->forward, path, ": operator #", i,
                  " lacks op_type, create, infer or forward");
    std::string domain = d->domain ? d->domain : "";
    std::string key = domain + "::" + d->op_type;
    names.push_back(key);
    if (!loaded.emplace(key, d).second) continue;
    registry.add({domain, d->op_type, 1, INT_MAX, "custom", "custom:" + std::string(d->op_type),
                  make_factory<CustomOperator>(d, is_onnx_operator(domain, d->op_type))});
  }
  return names;
}

}  // namespace deep500::ops
