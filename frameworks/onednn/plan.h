// Plans of the oneDNN backend. A Plan is everything one forward/backward
// call needs for one set of input shapes: primitives, their argument arrays,
// user-memory objects whose data handles are rebound each call, buffers it
// owns (packed weights, saved statistics and workspaces) and transient
// buffers it needs only while it runs (blocked activations, reorder
// targets, scratchpads), which live in the running thread's scratch arena,
// shared by every plan. Calls with shapes seen before reuse the plan (Key,
// PlanCache): the hot path rebinds pointers and executes the prepared C
// argument arrays, with no allocation.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "deep/tensor.h"
#include "frameworks/onednn/memory.h"
#include "operators/plan_hints.h"

namespace deep500::onednn {

// Fixed-capacity cache key (shapes and a few scalars), built without
// allocating on the hot path.
struct Key {
  std::array<int64_t, 80> v{};
  int n = 0;
  void add(int64_t x) {
    if (n < static_cast<int>(v.size())) v[n] = x;
    ++n;
  }
  void add(const Shape& s) {
    add(-1000 - static_cast<int64_t>(s.size()));
    for (int64_t d : s) add(d);
  }
  void add(const Tensor* t) {
    if (!t || !t->defined()) return add(int64_t{-7});
    add(t->shape());
  }
  void add_float(float f) {
    int32_t b;
    std::memcpy(&b, &f, sizeof b);
    add(static_cast<int64_t>(b));
  }
  bool operator==(const Key& o) const {
    return n == o.n &&
           std::memcmp(v.data(), o.v.data(), sizeof(int64_t) * std::min<int>(n, 80)) == 0;
  }
};

class Plan {
 public:
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  virtual ~Plan();
  // Adds a user memory (rebound to tensor data each call); returns its slot.
  int user(const memory::desc& md);
  memory& user_mem(int slot) { return user_[static_cast<size_t>(slot)]; }
  // Binds slot to p (no-op if unchanged).
  void bind(int slot, const void* p) {
    auto& b = bound_[static_cast<size_t>(slot)];
    if (b != p) {
      user_[static_cast<size_t>(slot)].set_data_handle(const_cast<void*>(p));
      for (auto& [s, m] : aliases_)
        if (s == slot) m.set_data_handle(const_cast<void*>(p));
      b = p;
    }
  }
  // Another view (descriptor) of the buffer bound to `slot`, rebound with it.
  memory alias(int slot, const memory::desc& md);
  // An internal buffer owned by the plan: its contents last between runs.
  memory owned(const memory::desc& md);
  // A buffer valid only while run() executes (contents undefined before):
  // placed at an offset in the running thread's scratch arena, so that
  // plans share one block instead of each owning its temporaries.
  memory transient(const memory::desc& md);
  // Returns `m` if it already has layout `want`, else a transient buffer of
  // layout `want` plus a reorder step m -> buffer (appended now).
  memory reorder_in(const memory& m, const memory::desc& want);
  // For outputs: returns `user` if it has layout `have`, else a transient
  // buffer of layout `have`; call finish_out() after adding the producing step.
  memory out_buffer(const memory& user, const memory::desc& have);
  void finish_out(const memory& buffer, const memory& user);
  // Appends a step; args keep the memories alive through the plan.
  void add(const dnnl::primitive& p, std::initializer_list<std::pair<int, memory>> args);
  // Scratchpad for a pd created with user_scratchpad_attr() (transient).
  memory scratchpad(const dnnl::primitive_desc_base& pd) { return transient(pd.scratchpad_desc()); }
  // Binds the transient buffers to this thread's arena, executes the steps.
  void run();

  std::string impl;               // impl name of the main primitive
  std::vector<Shape> out_shapes;  // output shapes for this plan's input shapes

 private:
  struct Step {
    dnnl::primitive prim;
    std::vector<dnnl_exec_arg_t> args;
  };
  std::vector<memory> user_;
  std::vector<const void*> bound_;
  std::vector<memory> owned_;
  std::vector<std::pair<int, memory>> aliases_;
  std::vector<std::pair<memory, std::size_t>> transient_;  // buffer, arena offset
  std::size_t transient_bytes_ = 0;
  std::byte* arena_bound_ = nullptr;  // arena block the transients point into
  std::vector<Step> steps_;
};

// The calling thread's scratch arena, grown to at least `bytes` (page
// aligned; contents undefined). Plans rebind when the block moves. Throws
// Error when the memory cannot be had.
std::byte* scratch_arena(std::size_t bytes);
// Bytes the calling thread's arena holds now (0 before any transient use).
std::size_t scratch_arena_bytes();

// Constant weights (Operator::set_constant_inputs) in the layout a primitive
// chose (format any): reordered once per weights pointer, not every call.
struct PackedWeights {
  // The memory the primitive reads: the user's slot when it already has
  // layout `want` or the weights are not constant (then a reorder step is
  // appended to `p` when layouts differ), else a buffer refresh() fills.
  memory bind(Plan& p, int user_slot, const memory::desc& want, bool constant);
  // Reorders the weights into the buffer when `weights` is a new pointer.
  // Null: the weights were freed after packing (Operator::
  // holds_constant_copy); throws Error when nothing was packed yet.
  void refresh(const void* weights);
  // Whether the buffer holds the packed weights (the plan no longer reads
  // the user's weights).
  bool packed() const { return reorder_ && packed_for_ != nullptr; }

 private:
  dnnl::reorder reorder_;  // empty: nothing to pack
  memory src_, buf_;
  const void* packed_for_ = nullptr;
};

// Appends the activations of a post-op chain to `p` as in-place eltwise
// steps on `y` (for results computed outside a primitive).
void add_activation_steps(Plan& p, const memory& y,
                          const std::vector<ops::hints::PostActivation>& acts);

// Small LRU-free cache: a handful of plans per operator, linear lookup.
class PlanCache {
 public:
  Plan* find(const Key& k) {
    for (auto& e : entries_)
      if (e.first == k) return e.second.get();
    return nullptr;
  }
  Plan* put(const Key& k, std::unique_ptr<Plan> p) {
    if (entries_.size() >= 8) entries_.erase(entries_.begin());
    entries_.emplace_back(k, std::move(p));
    return entries_.back().second.get();
  }

 private:
  std::vector<std::pair<Key, std::unique_ptr<Plan>>> entries_;
};

// Backward plan of a convolution-like op (Conv, ConvTranspose): backward data,
// then backward weights (and bias), reusing the reordered output gradient
// when both primitives want the same layout. User slots: 0 x, 1 w, 2 unused,
// 3 dy, 4 dx, 5 dw, 6 db (with bias). Without `data` (nobody needs dX:
// Operator::set_required_gradients) the backward-data step is left out and
// slot 4 is never read or written.
template <class BwdData, class BwdWeights, class Geom>
std::unique_ptr<Plan> data_and_weights_backward(const Geom& g, bool bias,
                                                const typename BwdData::primitive_desc& dpd,
                                                const typename BwdWeights::primitive_desc& wpd,
                                                const std::string& family, bool data = true) {
  auto p = std::make_unique<Plan>();
  int sx = p->user(g.src), sw = p->user(g.wei);
  p->user(g.src);  // slot 2 unused in backward
  int sdy = p->user(g.dst), sdx = p->user(g.src), sdw = p->user(g.wei);
  int sdb = bias ? p->user(g.bias) : -1;
  memory dy_d;
  if (data) {
    dy_d = p->reorder_in(p->user_mem(sdy), dpd.diff_dst_desc());
    memory wei = p->reorder_in(p->user_mem(sw), dpd.weights_desc());
    memory dsrc = p->out_buffer(p->user_mem(sdx), dpd.diff_src_desc());
    p->add(BwdData(dpd), {{DNNL_ARG_DIFF_DST, dy_d},
                          {DNNL_ARG_WEIGHTS, wei},
                          {DNNL_ARG_DIFF_SRC, dsrc},
                          {DNNL_ARG_SCRATCHPAD, p->scratchpad(dpd)}});
    p->finish_out(dsrc, p->user_mem(sdx));
  }
  memory dy_w = dy_d && wpd.diff_dst_desc() == dy_d.get_desc()
                    ? dy_d
                    : p->reorder_in(p->user_mem(sdy), wpd.diff_dst_desc());
  memory src = p->reorder_in(p->user_mem(sx), wpd.src_desc());
  memory dwei = p->out_buffer(p->user_mem(sdw), wpd.diff_weights_desc());
  p->add(BwdWeights(wpd), {{DNNL_ARG_SRC, src},
                           {DNNL_ARG_DIFF_DST, dy_w},
                           {DNNL_ARG_DIFF_WEIGHTS, dwei},
                           {DNNL_ARG_DIFF_BIAS, bias ? p->user_mem(sdb) : memory()},
                           {DNNL_ARG_SCRATCHPAD, p->scratchpad(wpd)}});
  p->finish_out(dwei, p->user_mem(sdw));
  p->impl = data ? impl_name(family, dpd) : impl_name(family + "_weights_only", wpd);
  p->out_shapes = {Shape(g.dst_d.begin(), g.dst_d.end())};
  return p;
}

}  // namespace deep500::onednn
