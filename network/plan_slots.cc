// Buffer slots of a plan (network/optimized_plan.h: assign_slots).
#include <algorithm>
#include <map>
#include <set>

#include "network/optimized_plan.h"

namespace deep500::network {

// Liveness on storage roots (the last step that reads a value or any alias
// of it), then slots: graph outputs are fresh every run (the caller keeps
// them); other values the kernel produced into its own storage get a slot,
// reused (best fit, same dtype) once every alias of its value is dead.
void assign_slots(OptimizedExecutor::Plan& p, const std::vector<int>& root,
                  const std::vector<bool>& fresh, const std::set<std::string>& output_names,
                  bool reuse) {
  const int n = static_cast<int>(p.values.size());
  const int forever = static_cast<int>(p.steps.size());
  std::vector<int> last(static_cast<size_t>(n), -1);
  for (int i = 0; i < forever; ++i)
    for (int v : p.steps[static_cast<size_t>(i)].in)
      if (v >= 0) last[static_cast<size_t>(root[v])] = std::max(last[root[v]], i);
  for (const auto& [name, v] : p.outputs) last[static_cast<size_t>(root[v])] = forever;
  if (!reuse)
    for (int v = 0; v < n; ++v) last[static_cast<size_t>(v)] = forever;

  // Greedy best fit per dtype: a value takes the smallest free slot that
  // holds it, else the largest free slot (grown to fit), else a new one; a
  // slot's final size is the largest value it ever holds.
  std::map<int, std::vector<int>> free_slots;  // dtype -> free slot ids
  std::vector<int64_t> slot_elems;             // per slot
  std::vector<DataType> slot_dtype;
  std::vector<int> slot_of(static_cast<size_t>(n), -1);
  std::vector<std::vector<int>> release(static_cast<size_t>(forever) + 1);
  auto elems_of = [&](int v) { return numel(p.descs[static_cast<size_t>(v)].shape); };
  auto dtype_of = [&](int v) { return p.descs[static_cast<size_t>(v)].dtype; };
  auto take = [&](int v) {
    auto& pool = free_slots[static_cast<int>(dtype_of(v))];
    const int64_t need = elems_of(v);
    auto best = pool.end(), largest = pool.end();
    for (auto it = pool.begin(); it != pool.end(); ++it) {
      int64_t have = slot_elems[static_cast<size_t>(*it)];
      if (have >= need && (best == pool.end() || have < slot_elems[static_cast<size_t>(*best)]))
        best = it;
      if (largest == pool.end() || have > slot_elems[static_cast<size_t>(*largest)]) largest = it;
    }
    auto chosen = best != pool.end() ? best : largest;
    if (chosen == pool.end()) {
      slot_elems.push_back(need);
      slot_dtype.push_back(dtype_of(v));
      return static_cast<int>(slot_elems.size()) - 1;
    }
    int slot = *chosen;
    pool.erase(chosen);
    slot_elems[static_cast<size_t>(slot)] = std::max(slot_elems[static_cast<size_t>(slot)], need);
    return slot;
  };
  for (int i = 0; i < forever; ++i) {
    auto& s = p.steps[static_cast<size_t>(i)];
    for (size_t j = 0; j < s.out.size(); ++j) {
      int v = s.out[j];
      if (v < 0 || !fresh[static_cast<size_t>(v)] || output_names.count(s.spec.outputs[j]))
        continue;
      int slot = take(v);
      slot_of[static_cast<size_t>(v)] = slot;
      s.out_slot[j] = slot;
      int end = std::max(last[static_cast<size_t>(v)], i);  // unused values die at once
      release[static_cast<size_t>(end)].push_back(v);
    }
    for (int v : release[static_cast<size_t>(i)])
      free_slots[static_cast<int>(dtype_of(v))].push_back(slot_of[static_cast<size_t>(v)]);
  }
  for (size_t k = 0; k < slot_elems.size(); ++k) {
    p.slots.emplace_back(slot_dtype[k], Shape{slot_elems[k]});
    p.slot_bytes += static_cast<std::size_t>(slot_elems[k]) * size_of(slot_dtype[k]);
  }
  for (auto& s : p.steps) {
    s.views.resize(s.out.size());
    for (size_t j = 0; j < s.out.size(); ++j) {
      if (s.out_slot[j] < 0) continue;
      const TensorDesc& d = p.descs[static_cast<size_t>(s.out[j])];
      s.views[j] =
          p.slots[static_cast<size_t>(s.out_slot[j])].slice(0, numel(d.shape)).view(d.shape);
    }
  }
  for (const auto& [name, v] : p.outputs) {
    int r = root[static_cast<size_t>(v)];
    p.clone_output.push_back(slot_of[static_cast<size_t>(r)] >= 0 ||
                             p.constant[static_cast<size_t>(r)]);
  }
}

}  // namespace deep500::network
