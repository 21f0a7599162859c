// `sweep:` of a recipe: a study over the cartesian product of its axes.
//
//   sweep:
//     training.distributed.scheme: [allreduce, ps, local-sgd:4]   # an axis: a recipe key,
//     training.distributed.ranks: [1, 2, 4]                       # then its values
//     exclude: [{training.distributed.scheme: ps, training.distributed.ranks: 1}]
//     baseline: {training.distributed.scheme: allreduce, training.distributed.ranks: 1}
//     speedup: samples_per_second:max   # the metric speedups are measured on, and
//                                       # whether higher (max) or lower (min) is better
//     processes: 1                  # members at once, each a process of its own
//
// Each point is a member: the recipe run with the point's values as --set
// overrides (recipes/results/study.h). Axes keep the file's order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace deep500::recipes {

class Fields;

struct SweepAxis {
  std::string key;                  // a recipe key, e.g. training.distributed.ranks
  std::vector<std::string> values;  // each as --set writes it (YAML flow text)
};

// One point of the sweep: (key, value) per axis, in the axes' order.
using SweepPoint = std::vector<std::pair<std::string, std::string>>;

struct SweepOptions {
  std::vector<SweepAxis> axes;  // none: no sweep
  // A point matching every pair of an entry is left out.
  std::vector<std::map<std::string, std::string>> exclude;
  // The member speedups are measured against (pairs matching exactly one
  // point); empty: the first point.
  std::map<std::string, std::string> baseline;
  std::string speedup_metric = "samples_per_second";
  bool speedup_maximize = true;  // higher is better (a rate); false: lower (a time)
  int64_t processes = 1;
};

// Reads `sweep` of `top` (absent or {}: no axes); Error naming the field
// for a key without values, a repeated value, an exclusion or baseline
// naming no axis or no value of it, a baseline matching no point or
// several, or exclusions that leave nothing.
SweepOptions read_sweep(Fields& top);

// The points in order (the last axis varies fastest), exclusions left out.
std::vector<SweepPoint> sweep_points(const SweepOptions& s);

// "scheme=ps, ranks=2": each axis by the last part of its key (the whole key
// where two axes share that part).
std::string point_label(const SweepOptions& s, const SweepPoint& p);

// The --set overrides of a point ("KEY=VALUE").
std::vector<std::string> point_overrides(const SweepPoint& p);

// The index of the baseline point in sweep_points(s).
size_t baseline_index(const SweepOptions& s, const std::vector<SweepPoint>& points);

}  // namespace deep500::recipes
