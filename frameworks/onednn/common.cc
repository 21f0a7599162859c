#include "frameworks/onednn/common.h"

#include <atomic>
#include <cstdlib>
#include <map>

namespace deep500::onednn {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  static dnnl::stream s(engine());
  return s;
}

memory::dims to_dims(const Shape& s) {
  if (s.empty()) return {1};
  return memory::dims(s.begin(), s.end());
}

memory::desc plain_md(const memory::dims& d) {
  memory::dims strides(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) strides[i - 1] = strides[i] * d[i];
  return memory::desc(d, memory::data_type::f32, strides);
}

memory::desc layout_md(const memory::dims& d, bool nhwc) {
  if (!nhwc || d.size() != 4) return plain_md(d);
  return memory::desc(d, memory::data_type::f32, tag::nhwc);
}

bool wants_nhwc(const ops::NodeSpec& node) {
  return node.attributes.get_int(hints::kSrcChannelsLast, 0) != 0 ||
         node.attributes.get_int(hints::kDstChannelsLast, 0) != 0;
}

memory::desc strided_md(const memory::dims& d, const memory::dims& strides) {
  return memory::desc(d, memory::data_type::f32, strides);
}

namespace {

// oneDNN's algorithm for a post-op activation (plan_hints.h vocabulary).
dnnl::algorithm activation_algorithm(const std::string& name) {
  using dnnl::algorithm;
  static const std::map<std::string, algorithm> algorithms = {
      {"relu", algorithm::eltwise_relu},           {"clip", algorithm::eltwise_clip_v2},
      {"linear", algorithm::eltwise_linear},       {"logistic", algorithm::eltwise_logistic},
      {"tanh", algorithm::eltwise_tanh},           {"elu", algorithm::eltwise_elu},
      {"hardswish", algorithm::eltwise_hardswish}, {"swish", algorithm::eltwise_swish},
      {"gelu_erf", algorithm::eltwise_gelu_erf},   {"soft_relu", algorithm::eltwise_soft_relu}};
  return algorithms.at(name);
}

}  // namespace

void append_activations(dnnl::post_ops& po, const std::vector<ops::hints::PostActivation>& acts) {
  for (const auto& a : acts) po.append_eltwise(1.f, activation_algorithm(a.name), a.alpha, a.beta);
}

void add_activation_steps(Plan& p, const memory& y,
                          const std::vector<ops::hints::PostActivation>& acts) {
  for (const auto& a : acts) {
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, activation_algorithm(a.name),
                                  y.get_desc(), a.alpha, a.beta);
    dnnl::eltwise_forward::primitive_desc pd(d, user_scratchpad_attr(), engine());
    p.add(dnnl::eltwise_forward(pd),
          {{DNNL_ARG_SRC, y}, {DNNL_ARG_DST, y}, {DNNL_ARG_SCRATCHPAD, p.scratchpad(pd)}});
  }
}

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

std::string impl_name(const std::string& family, const dnnl::primitive_desc_base& pd) {
  return "onednn:" + family + ":" + pd.impl_info_str();
}

int Plan::user(const memory::desc& md) {
  user_.emplace_back(md, engine(), static_cast<void*>(nullptr));
  bound_.push_back(nullptr);
  return static_cast<int>(user_.size() - 1);
}

memory Plan::alias(int slot, const memory::desc& md) {
  aliases_.emplace_back(slot, memory(md, engine(), static_cast<void*>(nullptr)));
  return aliases_.back().second;
}

memory Plan::owned(const memory::desc& md) {
  owned_.emplace_back(md, engine());
  return owned_.back();
}

namespace {

constexpr std::size_t kPage = 4096;

std::size_t round_to_page(std::size_t bytes) {
  return (bytes + kPage - 1) / kPage * kPage;
}

struct Arena {
  std::byte* block = nullptr;
  std::size_t bytes = 0;
  void release() {
    std::free(block);
    block = nullptr;
    bytes = 0;
  }
  ~Arena() { release(); }
};

thread_local Arena arena;
// Live plans with transient buffers; the last one to go frees its thread's
// arena (other threads' arenas go with their threads).
std::atomic<int> plans_with_transients{0};

}  // namespace

std::byte* scratch_arena(std::size_t bytes) {
  if (bytes > arena.bytes) {
    const std::size_t want = round_to_page(bytes);
    arena.release();
    arena.block = static_cast<std::byte*>(std::aligned_alloc(kPage, want));
    if (!arena.block) throw Error(cat("oneDNN scratch arena: cannot allocate ", want, " bytes"));
    arena.bytes = want;
  }
  return arena.block;
}

std::size_t scratch_arena_bytes() {
  return arena.bytes;
}

Plan::~Plan() {
  if (!transient_.empty() && plans_with_transients.fetch_sub(1) == 1) arena.release();
}

memory Plan::transient(const memory::desc& md) {
  if (md.get_size() == 0) return owned(md);  // nothing to place
  if (transient_.empty()) plans_with_transients.fetch_add(1);
  transient_.emplace_back(memory(md, engine(), static_cast<void*>(nullptr)), transient_bytes_);
  transient_bytes_ += round_to_page(md.get_size());
  return transient_.back().first;
}

memory Plan::reorder_in(const memory& m, const memory::desc& want) {
  if (m.get_desc() == want) return m;
  memory buf = transient(want);
  dnnl::reorder::primitive_desc pd(engine(), m.get_desc(), engine(), want);
  add(dnnl::reorder(pd), {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, buf}});
  return buf;
}

memory Plan::out_buffer(const memory& user, const memory::desc& have) {
  if (user.get_desc() == have) return user;
  return transient(have);
}

void Plan::finish_out(const memory& buffer, const memory& user) {
  if (buffer.get() == user.get()) return;
  dnnl::reorder::primitive_desc pd(engine(), buffer.get_desc(), engine(), user.get_desc());
  add(dnnl::reorder(pd), {{DNNL_ARG_FROM, buffer}, {DNNL_ARG_TO, user}});
}

void Plan::add(const dnnl::primitive& p, std::initializer_list<std::pair<int, memory>> args) {
  Step s{p, {}};
  for (const auto& [arg, m] : args) {
    if (!m) continue;
    s.args.push_back({arg, m.get()});
    // Keep every memory referenced by the C array alive with the plan.
    bool known = false;
    for (const auto& u : user_) known = known || u.get() == m.get();
    for (const auto& o : owned_) known = known || o.get() == m.get();
    for (const auto& a : aliases_) known = known || a.second.get() == m.get();
    for (const auto& t : transient_) known = known || t.first.get() == m.get();
    if (!known) owned_.push_back(m);
  }
  steps_.push_back(std::move(s));
}

void Plan::run() {
  if (!transient_.empty()) {
    std::byte* base = scratch_arena(transient_bytes_);
    if (base != arena_bound_) {
      for (auto& [m, offset] : transient_) m.set_data_handle(base + offset);
      arena_bound_ = base;
    }
  }
  dnnl_stream_t st = stream().get();
  for (const auto& s : steps_) {
    dnnl_status_t status =
        dnnl_primitive_execute(s.prim.get(), st, static_cast<int>(s.args.size()), s.args.data());
    if (status != dnnl_success)
      throw Error(cat("oneDNN primitive execution failed (status ", static_cast<int>(status), ")"));
  }
  dnnl_stream_wait(st);
}

memory PackedWeights::bind(Plan& p, int user_slot, const memory::desc& want, bool constant) {
  const memory& user = p.user_mem(user_slot);
  if (!constant || user.get_desc() == want) return p.reorder_in(user, want);
  src_ = user;
  buf_ = p.owned(want);
  reorder_ =
      dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user.get_desc(), engine(), want));
  return buf_;
}

void PackedWeights::refresh(const void* weights) {
  if (!reorder_ || packed_for_ == weights) return;
  if (!weights) {
    DEEP500_CHECK(packed_for_, "oneDNN: constant weights were freed before they were packed");
    return;  // freed after packing: the buffer holds them
  }
  reorder_.execute(stream(), src_, buf_);
  stream().wait();
  packed_for_ = weights;
}

Settings& settings() {
  static Settings s;
  return s;
}

std::string check_f32(const OpContext& ctx, size_t max_inputs) {
  if (ctx.num_inputs() > max_inputs)
    return cat("expected at most ", max_inputs, " inputs, got ", ctx.num_inputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.inputs[i].dtype != DataType::Float)
      return cat("oneDNN kernels here take float32 only (input ", i, " is ",
                 to_string(ctx.inputs[i]), ")");
  if (!ctx.has_input(0)) return "input 0 is absent";
  return {};
}

}  // namespace deep500::onednn

namespace deep500::onednn {

Window make_window(const ops::NodeSpec& node, const Shape& in, const Shape& kernel,
                   bool allow_ceil) {
  const auto& a = node.attributes;
  const size_t nd = in.size();
  Window w;
  auto strides = a.get_ints("strides", std::vector<int64_t>(nd, 1));
  auto dil = a.get_ints("dilations", std::vector<int64_t>(nd, 1));
  auto pads = a.get_ints("pads", std::vector<int64_t>(2 * nd, 0));
  std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  bool ceil = allow_ceil && a.get_int("ceil_mode", 0) != 0;
  DEEP500_CHECK(strides.size() == nd && dil.size() == nd && pads.size() == 2 * nd, node.describe(),
                ": strides/dilations need ", nd, " values and pads ", 2 * nd);
  for (size_t i = 0; i < nd; ++i) {
    DEEP500_CHECK(strides[i] >= 1 && dil[i] >= 1 && kernel[i] >= 1, node.describe(),
                  ": strides, dilations and kernel sizes must be >= 1");
    const int64_t ext = (kernel[i] - 1) * dil[i] + 1;
    int64_t pl = pads[i], pr = pads[i + nd], out;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = (in[i] + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + ext - in[i]);
      pl = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pr = total - pl;
    } else if (auto_pad == "VALID") {
      pl = pr = 0;
      out = (in[i] - ext) / strides[i] + 1;
    } else {
      DEEP500_CHECK(auto_pad == "NOTSET", node.describe(), ": unknown auto_pad '", auto_pad, "'");
      int64_t span = in[i] + pl + pr - ext;
      out = (ceil ? (span + strides[i] - 1) / strides[i] : span / strides[i]) + 1;
      if (ceil && span >= 0) {
        int64_t need = (out - 1) * strides[i] + ext - in[i] - pl;
        if (need > pr) {
          w.ceil_extra = true;
          pr = need;
        }
      }
    }
    DEEP500_CHECK(in[i] + pl + pr - ext >= 0 && out >= 1, node.describe(),
                  ": window larger than the padded input (input ", in[i], ", kernel extent ", ext,
                  ")");
    w.kernel.push_back(kernel[i]);
    w.strides.push_back(strides[i]);
    w.dilation.push_back(dil[i] - 1);
    w.pad_l.push_back(pl);
    w.pad_r.push_back(pr);
    w.out.push_back(out);
  }
  return w;
}

}  // namespace deep500::onednn
