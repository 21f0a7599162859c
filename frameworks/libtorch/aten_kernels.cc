#include "frameworks/libtorch/aten_kernels.h"

#include <c10/core/InferenceMode.h>
#include <dlfcn.h>
#include <omp.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/version.h>

#include <atomic>
#include <cstring>
#include <optional>

#include "frameworks/libtorch/torch_ops.h"

namespace deep500::libtorch {

namespace {

// `t` as an at::Tensor over the same memory (no copy).
at::Tensor wrap(const Tensor& t, const std::string& what) {
  if (!t.defined()) return {};
  auto opts = at::TensorOptions().dtype(to_aten(t.dtype(), what));
  return at::from_blob(const_cast<void*>(t.raw()), t.shape(), opts);
}

// Copies `r` into outputs[i] (reused when it has r's dtype and shape).
void write(const at::Tensor& r, std::span<Tensor> outputs, size_t i, const std::string& what) {
  DEEP500_CHECK(r.defined(), what, ": output ", i, " was not computed");
  const at::Tensor c = r.detach().contiguous();
  Tensor& out = ops::ensure_output(outputs, i, from_aten(c.scalar_type(), what), dims(c));
  DEEP500_CHECK(static_cast<size_t>(c.element_size()) == size_of(out.dtype()), what,
                ": element size mismatch");
  if (out.nbytes() > 0) std::memcpy(out.raw(), c.data_ptr(), out.nbytes());
}

// The loaded libblas.so.3's symbol `name` (nullptr when none has it).
void* blas_symbol(const char* name) {
  void* blas = dlopen("libblas.so.3", RTLD_LAZY | RTLD_NOLOAD);
  void* sym = blas ? dlsym(blas, name) : nullptr;
  if (blas) dlclose(blas);  // drops only the reference NOLOAD took
  return sym;
}

// ATen's intra-op threads, and OpenBLAS's own threads when libtorch runs on
// OpenBLAS, follow the caller's OpenMP setting (ThreadScope, --threads).
void follow_caller_threads() {
  using SetThreads = void (*)(int);
  static const auto openblas_threads =
      reinterpret_cast<SetThreads>(blas_symbol("openblas_set_num_threads"));
  static std::atomic<int> blas_threads{0};
  const int wanted = omp_get_max_threads();
  if (at::get_num_threads() != wanted) at::set_num_threads(wanted);
  if (openblas_threads && blas_threads.exchange(wanted) != wanted) openblas_threads(wanted);
}

// Runs `check`; an Error it throws becomes a refusal (ops::Unsupported).
template <class Check>
void as_refusal(const Check& check) {
  try {
    check();
  } catch (const Error& e) {
    throw ops::Unsupported(e.what());
  }
}

class AtenOperator final : public ops::Operator {
 public:
  AtenOperator(const ops::OpContext& ctx, const OpEntry& entry, const ops::Registry& registry)
      : node_(ctx.node), entry_(entry) {
    as_refusal([&] {  // element types and attributes the mapping cannot take
      for (size_t i = 0; i < ctx.num_inputs(); ++i)
        if (ctx.has_input(i)) to_aten(ctx.inputs[i].dtype, cat("input ", i));
      if (entry.check) entry.check(node_);
    });
    // Differentiability as the reference kernel of this node defines it.
    auto ref = registry.create(ctx, {ops::kReferenceBackend});
    if (ref.ok() && ref->op->has_backward())
      differentiable_ = ref->op->differentiable_inputs(ctx.num_inputs());
    for (size_t i = 0; i < differentiable_.size(); ++i)
      differentiable_[i] =
          differentiable_[i] && ctx.has_input(i) && is_floating(ctx.inputs[i].dtype);
  }

  void forward(std::span<const Tensor> inputs, std::span<Tensor> outputs) override {
    follow_caller_threads();
    recorded_.reset();
    if (follows_ && has_backward()) {  // keep the graph for the backward calls that follow
      recorded_ = record(inputs);
      write_outputs(recorded_->outputs, outputs);
      return;
    }
    c10::InferenceMode inference;
    write_outputs(entry_.fn(OpCall{node_, wrap_all(inputs)}), outputs);
  }

  bool has_backward() const override {
    for (bool d : differentiable_)
      if (d) return true;
    return false;
  }
  std::vector<bool> differentiable_inputs(size_t n) const override {
    std::vector<bool> d(n, false);
    for (size_t i = 0; i < n && i < differentiable_.size(); ++i) d[i] = differentiable_[i];
    return d;
  }
  void set_required_gradients(const std::vector<bool>& required) override { required_ = required; }
  void set_backward_follows_forward(bool promise) override {
    follows_ = promise;
    recorded_.reset();
  }

  void backward(std::span<const Tensor> grad_outputs, std::span<const Tensor> inputs,
                std::span<const Tensor>, std::span<Tensor> grad_inputs) override {
    follow_caller_threads();
    const bool reuse = recorded_ && recorded_->same_inputs(inputs);
    std::optional<Graph> fresh;
    if (!reuse) fresh = record(inputs);
    const Graph& g = reuse ? *recorded_ : *fresh;
    std::vector<at::Tensor> ys, dys, leaves;
    std::vector<size_t> leaf_of;
    for (size_t i = 0; i < g.outputs.size() && i < grad_outputs.size(); ++i)
      if (grad_outputs[i].defined() && g.outputs[i].defined() && g.outputs[i].requires_grad()) {
        ys.push_back(g.outputs[i]);
        dys.push_back(wrap(grad_outputs[i], node_.describe()));
      }
    for (size_t k = 0; k < g.leaves.size(); ++k)
      if (required(g.leaf_of[k])) {
        leaves.push_back(g.leaves[k]);
        leaf_of.push_back(g.leaf_of[k]);
      }
    if (ys.empty()) {  // no graded output depends on the inputs: zero gradients
      for (size_t i : leaf_of)
        ops::zeroed_output(grad_inputs, i, inputs[i].dtype(), inputs[i].shape());
      return;
    }
    if (leaves.empty()) return;
    at::AutoGradMode grad_on(true);
    const auto grads = torch::autograd::grad(ys, leaves, dys, /*retain_graph=*/reuse,
                                             /*create_graph=*/false, /*allow_unused=*/true);
    for (size_t k = 0; k < grads.size(); ++k) {
      const size_t i = leaf_of[k];
      if (grads[k].defined())
        write(grads[k], grad_inputs, i, node_.describe());
      else  // unused by the computation: its gradient is zero
        ops::zeroed_output(grad_inputs, i, inputs[i].dtype(), inputs[i].shape());
    }
  }

  std::string implementation() const override { return cat("libtorch:", entry_.aten); }

 private:
  // One forward call recorded by autograd: the differentiable inputs as
  // leaves, and the inputs' addresses and shapes it ran on.
  struct Graph {
    std::vector<at::Tensor> leaves, outputs;
    std::vector<size_t> leaf_of;  // input index of each leaf
    std::vector<const void*> data;
    std::vector<Shape> shapes;
    bool same_inputs(std::span<const Tensor> inputs) const {
      if (inputs.size() != data.size()) return false;
      for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].raw() != data[i] || inputs[i].shape() != shapes[i]) return false;
      return true;
    }
  };

  Graph record(std::span<const Tensor> inputs) const {
    at::AutoGradMode grad_on(true);
    Graph g;
    std::vector<at::Tensor> in = wrap_all(inputs);
    for (size_t i = 0; i < in.size(); ++i) {
      g.data.push_back(inputs[i].raw());
      g.shapes.push_back(inputs[i].shape());
      if (i < differentiable_.size() && differentiable_[i] && in[i].defined()) {
        in[i] = in[i].detach().requires_grad_(true);
        g.leaves.push_back(in[i]);
        g.leaf_of.push_back(i);
      }
    }
    g.outputs = entry_.fn(OpCall{node_, in});
    return g;
  }

  bool required(size_t i) const { return i >= required_.size() || required_[i]; }

  void write_outputs(const std::vector<at::Tensor>& results, std::span<Tensor> outputs) const {
    for (size_t i = 0; i < outputs.size() && i < node_.outputs.size(); ++i) {
      if (node_.outputs[i].empty()) continue;
      DEEP500_CHECK(i < results.size(), node_.describe(), ": ATen gave ", results.size(),
                    " outputs, output ", i, " is wanted");
      write(results[i], outputs, i, node_.describe());
    }
  }

  std::vector<at::Tensor> wrap_all(std::span<const Tensor> inputs) const {
    std::vector<at::Tensor> in;
    in.reserve(inputs.size());
    for (const auto& t : inputs) in.push_back(wrap(t, node_.describe()));
    return in;
  }

  const ops::NodeSpec node_;
  const OpEntry& entry_;
  std::vector<bool> differentiable_;
  std::vector<bool> required_;  // empty: every gradient
  bool follows_ = false;        // set_backward_follows_forward
  std::optional<Graph> recorded_;
};

// The path of the libblas.so.3 libtorch loaded ("" when none is found).
std::string loaded_blas() {
  void* sgemm = blas_symbol("sgemm_");
  Dl_info info{};
  if (!sgemm || dladdr(sgemm, &info) == 0 || !info.dli_fname) return "";
  return info.dli_fname;
}

}  // namespace

void register_aten_kernels(ops::Registry& r) {
  for (const OpEntry& e : op_table()) {
    const OpEntry* entry = &e;
    const ops::Registry* registry = &r;
    r.add({"", e.op_type, e.since, e.until, "libtorch", cat("libtorch:", e.aten),
           [entry, registry](const ops::OpContext& ctx) {
             return ops::make_operator<AtenOperator>(ctx, *entry, *registry);
           }});
  }
  r.add_library("libtorch", TORCH_VERSION);
  const std::string blas = loaded_blas();
  r.add_library("libtorch.blas", blas.empty() ? "unknown" : blas);
}

}  // namespace deep500::libtorch
