#include "operators/registry.h"

#include <algorithm>
#include <set>
#include "deep/text.h"
#include "operators/node_checks.h"

namespace deep500::ops {

Registry& Registry::global() {
  static Registry r;
  return r;
}

void Registry::add(KernelEntry e) {
  if (e.domain == "ai.onnx") e.domain.clear();
  DEEP500_CHECK(e.factory, "registry: kernel ", e.op_type, " for backend ", e.backend,
                " has no factory");
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[{e.domain, e.op_type}].push_back(std::move(e));
}

const KernelEntry* Registry::find(const std::string& domain, const std::string& op_type, int opset,
                                  const std::string& backend) const {
  auto it = entries_.find({domain == "ai.onnx" ? "" : domain, op_type});
  if (it == entries_.end()) return nullptr;
  const KernelEntry* best = nullptr;
  for (const auto& e : it->second)
    if (e.backend == backend && e.since_version <= opset && opset <= e.until_version)
      if (!best || e.since_version > best->since_version) best = &e;
  return best;
}

void Registry::add_deferred_backend(const std::string& backend,
                                    std::function<void(Registry&)> load) {
  DEEP500_CHECK(load, "registry: deferred backend ", backend, " has no loader");
  std::lock_guard<std::mutex> lock(mutex_);
  deferred_[backend] = Deferred{std::move(load), false};
}

std::string Registry::load_deferred(const std::string& backend) const {
  auto pending = [&]() -> std::function<void(Registry&)> {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = deferred_.find(backend);
    return it == deferred_.end() || it->second.loaded ? nullptr : it->second.load;
  };
  if (!pending()) return "";
  std::lock_guard<std::mutex> loading(load_mutex_);
  auto load = pending();  // another thread may have loaded it meanwhile
  if (!load) return "";
  try {
    // Registries are only made as non-const objects (global() or a test's
    // own); loading on a const lookup adds the backend's entries to it.
    load(const_cast<Registry&>(*this));
  } catch (const std::exception& e) {
    return e.what();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  deferred_.at(backend).loaded = true;
  return "";
}

bool Registry::has(const std::string& domain, const std::string& op_type, int opset,
                   const std::string& backend) const {
  if (!load_deferred(backend).empty()) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  return find(domain, op_type, opset, backend) != nullptr;
}

std::vector<std::string> Registry::backends() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::set<std::string> names;
  for (const auto& [key, list] : entries_)
    for (const auto& e : list) names.insert(e.backend);
  for (const auto& [name, d] : deferred_) names.insert(name);
  std::vector<std::string> out;
  for (const auto& n : names)
    if (n != kReferenceBackend) out.push_back(n);
  if (names.count(kReferenceBackend)) out.push_back(kReferenceBackend);
  return out;
}

void Registry::set_capabilities(const std::string& backend, BackendCapabilities caps) {
  std::lock_guard<std::mutex> lock(mutex_);
  capabilities_[backend] = caps;
}

BackendCapabilities Registry::capabilities(const std::string& backend) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = capabilities_.find(backend);
  return it == capabilities_.end() ? BackendCapabilities{} : it->second;
}

void Registry::set_default_preference(std::vector<std::string> order) {
  std::lock_guard<std::mutex> lock(mutex_);
  preference_ = std::move(order);
}

std::vector<std::string> Registry::default_preference() const {
  const std::vector<std::string> registered = backends();  // reference last
  auto is_registered = [&](const std::string& b) {
    return std::find(registered.begin(), registered.end(), b) != registered.end();
  };
  std::vector<std::string> out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& b : preference_)
      if (b != kReferenceBackend && is_registered(b) && !deferred_.count(b)) out.push_back(b);
    for (const auto& b : registered)
      if (std::find(out.begin(), out.end(), b) == out.end() && !deferred_.count(b))
        out.push_back(b);
  }
  return out;
}

void Registry::add_setting(BackendSetting setting) {
  DEEP500_CHECK(setting.get && setting.set, "registry: setting '", setting.name,
                "' needs get and set");
  std::lock_guard<std::mutex> lock(mutex_);
  settings_.push_back(std::move(setting));
  std::sort(settings_.begin(), settings_.end(),
            [](const BackendSetting& a, const BackendSetting& b) { return a.name < b.name; });
}

std::vector<std::pair<std::string, std::string>> Registry::settings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& s : settings_) out.emplace_back(s.name, s.get());
  return out;
}

bool Registry::setting_loads_code(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : settings_)
    if (s.name == name) return s.loads_code;
  return false;
}

void Registry::set_setting(const std::string& name, const std::string& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string known;
  for (auto& s : settings_) {
    if (s.name == name) return s.set(value);
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw Error(cat("unknown backend setting '", name,
                  "' (expected one of: ", known.empty() ? "none in this build" : known, ")"));
}

void Registry::add_library(const std::string& name, const std::string& version) {
  std::lock_guard<std::mutex> lock(mutex_);
  libraries_.emplace_back(name, version);
}

std::vector<std::pair<std::string, std::string>> Registry::libraries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return libraries_;
}

void Registry::check_backend_names(const std::vector<std::string>& names,
                                   const std::string& where) const {
  const auto known = backends();
  for (const auto& n : names)
    DEEP500_CHECK(std::find(known.begin(), known.end(), n) != known.end(), where,
                  ": unknown backend '", n, "' (expected one of: ", join(known, ", "), ")");
}

void Registry::add_plugin(const std::string& path, const std::string& build_type) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& p : plugins_)
    if (p.first == path) return;
  plugins_.emplace_back(path, build_type);
}

std::vector<std::pair<std::string, std::string>> Registry::plugins() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return plugins_;
}

std::vector<std::pair<std::string, std::string>> Registry::op_types(
    const std::string& backend) const {
  load_deferred(backend);  // a backend that fails to load has none
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, list] : entries_)
    if (std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.backend == backend; }))
      out.push_back(key);
  return out;
}

Expected<CreatedOp> Registry::create(const OpContext& ctx,
                                     const std::vector<std::string>& backends) const {
  check_node(ctx);  // bad input is an Error whatever the backend
  std::vector<std::string> order = backends.empty() ? default_preference() : backends;
  std::string reasons;
  for (const auto& b : order) {
    if (std::string failed = load_deferred(b); !failed.empty()) {
      reasons += cat("; ", b, ": ", failed);
      continue;
    }
    const KernelEntry* e;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      e = find(ctx.node.domain, ctx.node.op_type, ctx.node.opset, b);
    }
    if (!e) {
      reasons += cat("; ", b, ": no kernel for this op type at opset ", ctx.node.opset);
      continue;
    }
    auto made = e->factory(ctx);
    if (made.ok()) return CreatedOp{std::move(made.value()), e->backend, e->implementation};
    reasons += cat("; ", b, ": ", made.refusal().reason);
  }
  return refuse(cat(ctx.node.describe(), ": no backend accepted it", reasons));
}

}  // namespace deep500::ops
