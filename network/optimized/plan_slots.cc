// Buffer slots of a plan (network/optimized/optimized_plan.h: assign_slots).
#include <algorithm>
#include <map>
#include <set>

#include "network/optimized/optimized_plan.h"

namespace deep500::network {
namespace {

// Large tensors are mapped lazily (fresh zero pages, huge pages where the
// system gives them): an arena is touched once when it is made, so the
// faults and the kernel's clearing of its pages fall into planning, not
// into the first replays (LR-ASPP at batch 16: 538 and 341 ms, then 164 ms).
void touch_pages(Tensor& t) {
  auto* p = static_cast<volatile unsigned char*>(t.raw());
  for (std::size_t i = 0; i < t.nbytes(); i += 4096) p[i] = 0;
}

// Offsets of values in an arena start on 64-byte boundaries (a cache line,
// an AVX-512 vector).
constexpr int64_t kArenaAlignBytes = 64;

struct Interval {
  int value;
  int first, last;  // steps, inclusive
  int64_t elems;
  int64_t offset;  // in elements, set by place_by_size
};

bool overlap_in_time(const Interval& a, const Interval& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Greedy by size: the largest values first, each at the start of the
// smallest gap (between values live at the same time, already placed) that
// holds it, else after the last of them. Offsets are multiples of `align`.
// Returns the arena's size in elements.
int64_t place_by_size(std::vector<Interval*>& values, int64_t align) {
  auto rounded = [align](int64_t x) { return (x + align - 1) / align * align; };
  std::stable_sort(values.begin(), values.end(), [](const Interval* a, const Interval* b) {
    return a->elems != b->elems ? a->elems > b->elems : a->first < b->first;
  });
  std::vector<const Interval*> placed;
  int64_t arena = 0;
  for (Interval* v : values) {
    std::vector<const Interval*> busy;
    for (const Interval* q : placed)
      if (overlap_in_time(*q, *v)) busy.push_back(q);
    std::sort(busy.begin(), busy.end(),
              [](const Interval* a, const Interval* b) { return a->offset < b->offset; });
    int64_t end = 0, best = -1, best_gap = 0;
    for (const Interval* q : busy) {
      const int64_t gap = q->offset - end;
      if (gap >= v->elems && (best < 0 || gap < best_gap)) {
        best = end;
        best_gap = gap;
      }
      end = std::max(end, rounded(q->offset + q->elems));
    }
    v->offset = best >= 0 ? best : end;
    arena = std::max(arena, v->offset + v->elems);
    placed.push_back(v);
  }
  return arena;
}

}  // namespace

// Liveness on storage roots (the last step that reads a value or any alias
// of it), then arena offsets: graph outputs are fresh every run (the caller
// keeps them); other values the kernel produced into its own storage get a
// place in their dtype's arena, shared with values that are never live at
// the same time.
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

  // Each fresh intermediate lives from the step that makes it to the last
  // step that reads its root (unused values die at once).
  std::vector<Interval> intervals;
  for (int i = 0; i < forever; ++i) {
    const auto& s = p.steps[static_cast<size_t>(i)];
    for (size_t j = 0; j < s.out.size(); ++j) {
      const int v = s.out[j];
      if (v < 0 || !fresh[static_cast<size_t>(v)] || output_names.count(s.spec.outputs[j]))
        continue;
      const TensorDesc& d = p.descs[static_cast<size_t>(v)];
      intervals.push_back({v, i, std::max(last[static_cast<size_t>(v)], i), numel(d.shape), 0});
    }
  }
  // One arena per dtype; offsets packed by size (place_by_size).
  std::map<DataType, std::vector<Interval*>> by_dtype;
  for (auto& iv : intervals) by_dtype[p.descs[static_cast<size_t>(iv.value)].dtype].push_back(&iv);
  std::vector<int> slot_of(static_cast<size_t>(n), -1);
  std::vector<int64_t> offset_of(static_cast<size_t>(n), 0);  // element offset in its arena
  for (auto& [dtype, group] : by_dtype) {
    const int64_t align = std::max<int64_t>(1, kArenaAlignBytes / size_of(dtype));
    const int64_t elems = place_by_size(group, align);
    const int slot = static_cast<int>(p.slots.size());
    p.slots.emplace_back(dtype, Shape{elems});
    touch_pages(p.slots.back());
    p.slot_bytes += static_cast<std::size_t>(elems) * size_of(dtype);
    for (const Interval* iv : group) {
      slot_of[static_cast<size_t>(iv->value)] = slot;
      offset_of[static_cast<size_t>(iv->value)] = iv->offset;
    }
  }
  for (auto& s : p.steps)
    for (size_t j = 0; j < s.out.size(); ++j)
      if (s.out[j] >= 0) s.out_slot[j] = slot_of[static_cast<size_t>(s.out[j])];
  for (auto& s : p.steps) {
    s.views.resize(s.out.size());
    for (size_t j = 0; j < s.out.size(); ++j) {
      if (s.out_slot[j] < 0) continue;
      const TensorDesc& d = p.descs[static_cast<size_t>(s.out[j])];
      const int64_t at = offset_of[static_cast<size_t>(s.out[j])];
      s.views[j] =
          p.slots[static_cast<size_t>(s.out_slot[j])].slice(at, at + numel(d.shape)).view(d.shape);
    }
  }
  for (const auto& [name, v] : p.outputs) {
    int r = root[static_cast<size_t>(v)];
    p.clone_output.push_back(slot_of[static_cast<size_t>(r)] >= 0 ||
                             p.constant[static_cast<size_t>(r)]);
  }
}

}  // namespace deep500::network
