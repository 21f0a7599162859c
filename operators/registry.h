// Kernel registry keyed by (ONNX domain, op type, opset range, backend)
// (ARCHITECTURE.md idea 2). Backends fill it from an explicit table; a
// factory may refuse a configuration and say why. Selection walks the
// caller's backend preference list and takes the first that accepts,
// recording which implementation ran.
//
// Refusal contract, the one way every backend (and custom operators) says
// "not this configuration": a kernel class Op built by make_factory<Op>()
//  1. may declare `static std::string refusal(const ops::OpContext&)`,
//     returning "" to accept or the reason it refuses (checked first, before
//     anything is built: dtypes, attribute values it does not implement);
//  2. is constructed as Op(ctx, args...), then `prepare(ctx)` runs when Op
//     declares it (e.g. to build the first plan);
//  3. may throw ops::Unsupported from its constructor or prepare() to refuse
//     with that message once it has looked deeper;
//  4. throws deep500::Error for bad input (a wrong attribute type or input
//     count): that is not a refusal, it propagates out of Registry::create.
// Backend wrappers add only what is theirs on top of make_operator<Op>():
// the cuDNN device check, oneDNN's dnnl::error turned into a refusal.
//
// Thread safety: every member may be called from any thread (one mutex);
// backends register and declare their metadata once at start-up
// (frameworks::register_all), before kernels are created.
#pragma once

#include <climits>
#include <concepts>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "operators/operator.h"
#include "operators/plan_hints.h"

namespace deep500::ops {

// The oracle backend every build has (frameworks/reference).
inline constexpr const char* kReferenceBackend = "reference";

using OpFactory = std::function<Expected<std::unique_ptr<Operator>>(const OpContext&)>;

struct KernelEntry {
  std::string domain;  // "" = ai.onnx
  std::string op_type;
  int since_version = 1;  // inclusive opset range this kernel implements
  int until_version = INT_MAX;
  std::string backend;         // "reference", "onednn", ...
  std::string implementation;  // e.g. "onednn:conv:jit" (recorded in results)
  OpFactory factory;
};

// A typed setting a backend declares (e.g. "onednn.direct_loops"): the
// backend owns the value; get() prints it as results record it, set() parses
// text and throws Error naming the setting and the expected values.
struct BackendSetting {
  std::string name;  // "<backend>.<field>"
  std::string help;  // what it changes, and its values
  std::function<std::string()> get;
  std::function<void(const std::string&)> set;
  // The value names code to load (a library path): such a setting comes
  // from the command line only, never from a recipe or a results file
  // (docs/security.md).
  bool loads_code = false;
};

struct CreatedOp {
  std::unique_ptr<Operator> op;
  std::string backend;
  std::string implementation;  // the registry's name for the kernel

  // What the last forward()/backward() call ran: the kernel's own name when
  // it knows one (Operator::implementation(), e.g. the cuDNN algorithm),
  // else the registry's.
  std::string ran_implementation() const {
    std::string own = op ? op->implementation() : std::string();
    return own.empty() ? implementation : own;
  }
};

class Registry {
 public:
  // The process-wide registry that frameworks/register_all.cc fills.
  static Registry& global();

  void add(KernelEntry entry);

  // Creates an operator for `ctx.node`, trying `backends` in order (empty:
  // default_preference()). Returns a Refusal listing each backend's reason
  // when none accepts. First validates the node (check_node in
  // node_checks.h), throwing Error for bad attributes or parameter shapes.
  Expected<CreatedOp> create(const OpContext& ctx, const std::vector<std::string>& backends) const;

  // Backend metadata, declared where backends register (frameworks/):
  // capabilities (plan_hints.h; all false for a backend that declared none),
  // the default preference order used when no backend list is given (the
  // declared backends that are registered, in order, then the other
  // registered ones by name, reference last), and typed settings.
  void set_capabilities(const std::string& backend, BackendCapabilities caps);
  BackendCapabilities capabilities(const std::string& backend) const;
  void set_default_preference(std::vector<std::string> order);
  std::vector<std::string> default_preference() const;
  void add_setting(BackendSetting setting);
  // (name, value) of every declared setting, sorted by name.
  std::vector<std::pair<std::string, std::string>> settings() const;
  // Sets a declared setting from text; an unknown name throws Error listing
  // the known ones.
  void set_setting(const std::string& name, const std::string& value);
  const std::vector<BackendSetting>& setting_list() const { return settings_; }
  // True when `name` is a declared setting whose value names code to load.
  bool setting_loads_code(const std::string& name) const;
  // The library a backend runs on and its version as loaded (e.g. "onednn",
  // "2.6.3"), recorded in every result's context.
  void add_library(const std::string& name, const std::string& version);
  std::vector<std::pair<std::string, std::string>> libraries() const;
  // A custom-operator library loaded at run time (custom_op_loader.h): its
  // path and the build type it declares ("unknown" when it declares none),
  // recorded in every result's context beside deep500's own build type.
  void add_plugin(const std::string& path, const std::string& build_type);
  std::vector<std::pair<std::string, std::string>> plugins() const;

  // A backend whose kernels live in a library loaded on first use (libtorch:
  // ~150 MB resident and 0.6 s to load, which programs not using it should
  // not pay). backends() lists its name at once; `load` runs once, outside the
  // registry's lock, the first time one of its kernels is wanted (create()
  // with it in the list, has(), op_types() of it) and registers them with
  // add() (it must not query the registry itself). When `load` throws, create() records the message
  // as that backend's refusal and has() is false; a later call tries again. A deferred backend is
  // left out of default_preference(): it runs only where a backend list names it.
  void add_deferred_backend(const std::string& backend, std::function<void(Registry&)> load);

  bool has(const std::string& domain, const std::string& op_type, int opset,
           const std::string& backend) const;
  std::vector<std::string> backends() const;
  // Throws Error starting with `where` and listing the registered backends
  // when a name in `names` is not one of them (a typo is bad input, not a
  // backend that refuses).
  void check_backend_names(const std::vector<std::string>& names, const std::string& where) const;
  // (domain, op_type) pairs a backend registers, sorted.
  std::vector<std::pair<std::string, std::string>> op_types(const std::string& backend) const;

 private:
  const KernelEntry* find(const std::string& domain, const std::string& op_type, int opset,
                          const std::string& backend) const;
  // Loads `backend` when it is deferred and not loaded yet; "" when ready,
  // else the loader's error message.
  std::string load_deferred(const std::string& backend) const;
  struct Deferred {
    std::function<void(Registry&)> load;
    bool loaded = false;
  };
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::vector<KernelEntry>> entries_;
  std::map<std::string, BackendCapabilities> capabilities_;
  std::vector<std::string> preference_;
  std::vector<BackendSetting> settings_;
  std::vector<std::pair<std::string, std::string>> libraries_;
  std::vector<std::pair<std::string, std::string>> plugins_;
  mutable std::map<std::string, Deferred> deferred_;  // `loaded` set by const lookups
  mutable std::mutex load_mutex_;  // serialises loaders (taken before mutex_, never inside it)
};

// Thrown by a kernel's constructor or prepare() to refuse a configuration it
// found it cannot run (the refusal contract above, rule 3). Not an Error: it
// never reaches the user as bad input.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class Op>
concept DeclaresRefusal = requires(const OpContext& ctx) {
  { Op::refusal(ctx) } -> std::convertible_to<std::string>;
};
template <class Op>
concept DeclaresPrepare = requires(Op& op, const OpContext& ctx) {
  op.prepare(ctx);
};

// Applies the refusal contract to Op for one context: Op::refusal(ctx), then
// Op(ctx, args...) and op.prepare(ctx); Unsupported becomes a refusal.
template <class Op, class... Args>
Expected<std::unique_ptr<Operator>> make_operator(const OpContext& ctx, const Args&... args) {
  if constexpr (DeclaresRefusal<Op>) {
    std::string why = Op::refusal(ctx);
    if (!why.empty()) return refuse(std::move(why));
  }
  try {
    auto op = std::make_unique<Op>(ctx, args...);
    if constexpr (DeclaresPrepare<Op>) op->prepare(ctx);
    return std::unique_ptr<Operator>(std::move(op));
  } catch (const Unsupported& e) {
    return refuse(e.what());
  }
}

// The factory of every kernel: make_operator<Op>(ctx, args...), `args`
// copied into the factory (e.g. a flag shared by two op types' kernels).
template <class Op, class... Args>
OpFactory make_factory(Args... args) {
  return [args...](const OpContext& ctx) { return make_operator<Op>(ctx, args...); };
}

}  // namespace deep500::ops
