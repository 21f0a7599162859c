// NamedRegistry<Factory>: things made by name (executors, optimizers, graph
// passes), the one registry template of the project. The kernel registry
// (operators/registry.h) has another key (domain, op type, opset range,
// backend) and a preference order, but the same conventions: add() at
// start-up, an unknown name is an Error listing the known ones.
//
// Thread safety: every member may be called from any thread (one mutex).
// get() copies the factory out, so it is called outside the lock and may
// itself use the registry.
#pragma once

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "deep/error.h"

namespace deep500 {

template <class Factory>
class NamedRegistry {
 public:
  // `kind` names what is registered in messages: "executor", "optimizer".
  explicit NamedRegistry(std::string kind) : kind_(std::move(kind)) {}
  NamedRegistry(std::string kind, std::vector<std::pair<std::string, Factory>> entries)
      : NamedRegistry(std::move(kind)) {
    for (auto& [name, f] : entries) add(name, std::move(f));
  }

  // Adds `name`, or replaces the factory registered under it.
  void add(const std::string& name, Factory factory) {
    DEEP500_CHECK(!name.empty() && static_cast<bool>(factory), kind_,
                  " registry: empty name or factory for '", name, "'");
    std::lock_guard<std::mutex> lock(mutex_);
    factories_[name] = std::move(factory);
  }

  bool has(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return factories_.count(name) != 0;
  }

  // Sorted.
  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [name, f] : factories_) out.push_back(name);
    return out;
  }

  // The factory of `name`; an unknown name throws Error "unknown <kind>
  // '<name>' (expected one of: <names><also>)".
  Factory get(const std::string& name, const std::string& also = "") const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = factories_.find(name);
    if (it != factories_.end()) return it->second;
    std::string known;
    for (const auto& [n, f] : factories_) known += (known.empty() ? "" : ", ") + n;
    throw Error(cat("unknown ", kind_, " '", name, "' (expected one of: ", known, also, ")"));
  }

 private:
  const std::string kind_;
  mutable std::mutex mutex_;
  std::map<std::string, Factory> factories_;
};

}  // namespace deep500
