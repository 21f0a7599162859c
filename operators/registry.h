// Kernel registry keyed by (ONNX domain, op type, opset range, backend)
// (ARCHITECTURE.md idea 2). Backends fill it from an explicit table; a
// factory may refuse a configuration and say why. Selection walks the
// caller's backend preference list and takes the first that accepts,
// recording which implementation ran.
#pragma once

#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "operators/operator.h"

namespace deep500::ops {

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

struct CreatedOp {
  std::unique_ptr<Operator> op;
  std::string backend;
  std::string implementation;
};

class Registry {
 public:
  // The process-wide registry that frameworks/register_all.cc fills.
  static Registry& global();

  void add(KernelEntry entry);

  // Creates an operator for `ctx.node`, trying `backends` in order (empty:
  // every registered backend, reference last). Returns a Refusal listing each
  // backend's reason when none accepts.
  Expected<CreatedOp> create(const OpContext& ctx, const std::vector<std::string>& backends) const;

  bool has(const std::string& domain, const std::string& op_type, int opset,
           const std::string& backend) const;
  std::vector<std::string> backends() const;
  // (domain, op_type) pairs a backend registers, sorted.
  std::vector<std::pair<std::string, std::string>> op_types(const std::string& backend) const;

 private:
  const KernelEntry* find(const std::string& domain, const std::string& op_type, int opset,
                          const std::string& backend) const;
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::vector<KernelEntry>> entries_;
};

// Convenience for kernels: a factory that constructs Op(ctx) and lets a
// deep500::Error from the constructor propagate (bad input), or refuses via
// a static `Op::accepts(ctx)` returning an optional reason when present.
template <class Op>
OpFactory make_factory() {
  return [](const OpContext& ctx) -> Expected<std::unique_ptr<Operator>> {
    return std::unique_ptr<Operator>(std::make_unique<Op>(ctx));
  };
}

}  // namespace deep500::ops
