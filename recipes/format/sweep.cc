#include "recipes/format/sweep.h"

#include <algorithm>

#include "deep/error.h"
#include "deep/text.h"
#include "recipes/format/yaml_fields.h"

namespace deep500::recipes {

namespace {

// A value as --set writes it: a scalar's text, anything else as YAML flow.
std::string value_text(const YAML::Node& v) {
  if (v.IsScalar()) return v.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << v;
  return out.c_str();
}

const SweepAxis* find_axis(const SweepOptions& s, const std::string& key) {
  for (const auto& a : s.axes)
    if (a.key == key) return &a;
  return nullptr;
}

// {AXIS: VALUE, ...} of `exclude` or `baseline`; `what` names it in errors.
std::map<std::string, std::string> read_point(const Fields& top, const SweepOptions& s,
                                              const YAML::Node& node, const std::string& what) {
  if (!node.IsMap() || node.size() == 0)
    top.fail("sweep", cat(what, ": expected a map of axes to values, e.g. {", s.axes[0].key, ": ",
                          s.axes[0].values[0], "}"));
  std::map<std::string, std::string> out;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar(), value = value_text(kv.second);
    const SweepAxis* axis = find_axis(s, key);
    if (!axis) top.fail("sweep", cat(what, ": ", key, " is not an axis of the sweep"));
    if (std::find(axis->values.begin(), axis->values.end(), value) == axis->values.end())
      top.fail("sweep", cat(what, ": ", key, ": ", value, " is not one of its values (",
                            join(axis->values, ", "), ")"));
    out[key] = value;
  }
  return out;
}

bool matches(const SweepPoint& p, const std::map<std::string, std::string>& pairs) {
  return std::all_of(pairs.begin(), pairs.end(), [&](const auto& kv) {
    return std::find(p.begin(), p.end(), std::pair(kv.first, kv.second)) != p.end();
  });
}

void read_axis(const Fields& top, SweepOptions& s, const std::string& key, const YAML::Node& v) {
  if (!v.IsSequence() || v.size() == 0)
    top.fail("sweep", cat(key, ": expected a non-empty list of values, e.g. [1, 2, 4]"));
  SweepAxis axis{key, {}};
  for (const auto& item : v) {
    const std::string text = value_text(item);
    if (std::find(axis.values.begin(), axis.values.end(), text) != axis.values.end())
      top.fail("sweep", cat(key, ": value ", text, " is listed twice"));
    axis.values.push_back(text);
  }
  s.axes.push_back(std::move(axis));
}

int64_t read_count(const Fields& top, const YAML::Node& v) {
  const std::string text = v.IsScalar() ? v.Scalar() : "";
  int64_t n = 0;
  if (!parse_int(text, n) || n < 1 || n > 1024)
    top.fail("sweep", cat("processes: expected a count of processes from 1 to 1024, got '",
                          value_text(v), "'"));
  return n;
}

}  // namespace

SweepOptions read_sweep(Fields& top) {
  SweepOptions s;
  const YAML::Node node = top.node("sweep");
  if (!node.IsDefined() || node.IsNull()) return s;
  if (!node.IsMap())
    top.fail("sweep",
             "expected a map of recipe keys to lists of values (and exclude, baseline, "
             "speedup, processes)");
  const std::vector<std::string> options = {"exclude", "baseline", "speedup", "processes"};
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (std::find(options.begin(), options.end(), key) == options.end())
      read_axis(top, s, key, kv.second);
  }
  top.resolve("sweep", YAML::Clone(node));
  if (s.axes.empty()) {
    if (node.size() > 0) top.fail("sweep", "has options but no axis (KEY: [VALUES])");
    return s;
  }
  if (const YAML::Node e = node["exclude"]; e.IsDefined()) {
    if (!e.IsSequence()) top.fail("sweep", "exclude: expected a list of maps of axes to values");
    for (size_t i = 0; i < e.size(); ++i)
      s.exclude.push_back(read_point(top, s, e[i], cat("exclude[", i, "]")));
  }
  if (const YAML::Node b = node["baseline"]; b.IsDefined())
    s.baseline = read_point(top, s, b, "baseline");
  if (const YAML::Node m = node["speedup"]; m.IsDefined()) {
    const std::string text = value_text(m);
    const auto colon = text.rfind(':');
    const std::string direction = colon == std::string::npos ? "" : text.substr(colon + 1);
    if (direction != "max" && direction != "min")
      top.fail("sweep", cat("speedup: expected METRIC:max or METRIC:min (whether higher or lower "
                            "is better), e.g. samples_per_second:max, got '",
                            text, "'"));
    s.speedup_metric = text.substr(0, colon);
    s.speedup_maximize = direction == "max";
  }
  if (const YAML::Node p = node["processes"]; p.IsDefined()) s.processes = read_count(top, p);
  const auto points = sweep_points(s);
  if (points.empty()) top.fail("sweep", "exclude leaves no point to run");
  try {
    baseline_index(s, points);
  } catch (const Error& e) {
    top.fail("sweep", e.what());
  }
  return s;
}

std::vector<SweepPoint> sweep_points(const SweepOptions& s) {
  std::vector<SweepPoint> points = {{}};
  for (const auto& axis : s.axes) {
    std::vector<SweepPoint> longer;
    for (const auto& p : points)
      for (const auto& v : axis.values) {
        longer.push_back(p);
        longer.back().emplace_back(axis.key, v);
      }
    points = std::move(longer);
  }
  if (s.axes.empty()) return {};
  std::erase_if(points, [&](const SweepPoint& p) {
    return std::any_of(s.exclude.begin(), s.exclude.end(),
                       [&](const auto& e) { return matches(p, e); });
  });
  return points;
}

std::string point_label(const SweepOptions& s, const SweepPoint& p) {
  auto last_part = [](const std::string& key) { return key.substr(key.rfind('.') + 1); };
  std::vector<std::string> parts;
  for (const auto& [key, value] : p) {
    const auto same = std::count_if(s.axes.begin(), s.axes.end(), [&](const SweepAxis& a) {
      return last_part(a.key) == last_part(key);
    });
    parts.push_back(cat(same > 1 ? key : last_part(key), "=", value));
  }
  return join(parts, ", ");
}

std::vector<std::string> point_overrides(const SweepPoint& p) {
  std::vector<std::string> out;
  for (const auto& [key, value] : p) out.push_back(key + "=" + value);
  return out;
}

size_t baseline_index(const SweepOptions& s, const std::vector<SweepPoint>& points) {
  if (s.baseline.empty()) return 0;
  std::vector<size_t> found;
  for (size_t i = 0; i < points.size(); ++i)
    if (matches(points[i], s.baseline)) found.push_back(i);
  std::vector<std::string> pairs;
  for (const auto& [k, v] : s.baseline) pairs.push_back(k + ": " + v);
  DEEP500_CHECK(found.size() == 1, "baseline {", join(pairs, ", "), "} matches ", found.size(),
                " points; expected exactly one (name a value of more axes)");
  return found[0];
}

}  // namespace deep500::recipes
