#include "operators/registry.h"

#include <algorithm>
#include <set>

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

bool Registry::has(const std::string& domain, const std::string& op_type, int opset,
                   const std::string& backend) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return find(domain, op_type, opset, backend) != nullptr;
}

std::vector<std::string> Registry::backends() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::set<std::string> names;
  for (const auto& [key, list] : entries_)
    for (const auto& e : list) names.insert(e.backend);
  std::vector<std::string> out;
  for (const auto& n : names)
    if (n != "reference") out.push_back(n);
  if (names.count("reference")) out.push_back("reference");
  return out;
}

std::vector<std::pair<std::string, std::string>> Registry::op_types(
    const std::string& backend) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, list] : entries_)
    if (std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.backend == backend; }))
      out.push_back(key);
  return out;
}

Expected<CreatedOp> Registry::create(const OpContext& ctx,
                                     const std::vector<std::string>& backends) const {
  std::vector<std::string> order = backends.empty() ? this->backends() : backends;
  std::string reasons;
  for (const auto& b : order) {
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
