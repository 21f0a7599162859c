#include "recipes/judging/comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "deep/error.h"
#include "deep/onnx_tensor.h"
#include "deep/text.h"
#include "metrics/significance.h"
#include "recipes/format/json_fields.h"
#include "recipes/judging/scoreboard.h"
#include "recipes/results/history.h"

namespace deep500::recipes {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kMaxResultsBytes = 256ull << 20;
constexpr int kMaxDepth = 64;

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 19 && s.find_first_not_of("0123456789") == std::string::npos;
}

std::string describe_run(const json& r) {
  const json& recipe = field(r, "recipe");
  const std::string label = field_text(r, "label");
  return cat(field_text(recipe, "name"), " ", field_text(recipe, "version"),
             label.empty() ? "" : " [" + label + "]", ", ", field_text(r, "status"), ", started ",
             field_text(r, "started_utc"));
}

MetricComparison compare_metric(const std::string& name, const json& a, const json& b,
                                double alpha) {
  MetricComparison m{name, field(a, "value").get<double>(), field(b, "value").get<double>()};
  const auto sa = json_numbers(field(a, "samples")), sb = json_numbers(field(b, "samples"));
  const json &ta = field(a, "trials"), &tb = field(b, "trials");
  const bool proportions = ta.is_number() && tb.is_number() && ta.get<double>() > 0 &&
                           tb.get<double>() > 0 && m.a >= 0 && m.a <= 1 && m.b >= 0 && m.b <= 1;
  const metrics::RatioInterval r = metrics::hodges_lehmann_ratio(sa, sb, 1 - alpha);
  m.ratio = r.estimate;
  m.ratio_low = r.low;
  m.ratio_high = r.high;
  if (sa.size() >= 2 && sb.size() >= 2) {
    m.test = cat("rank ", sa.size(), " vs ", sb.size());
    m.p_value = metrics::mann_whitney_u(sa, sb).p_value;
  } else if (proportions) {
    const double na = ta.get<double>(), nb = tb.get<double>();
    m.test = na == nb ? cat("proportions of ", na) : cat("proportions of ", na, " vs ", nb);
    m.p_value =
        metrics::two_proportion_z(std::round(m.a * na), na, std::round(m.b * nb), nb).p_value;
  }
  m.p_adjusted = m.p_value;
  return m;
}

// Holm's adjustment over the tested metrics, then their verdicts.
void adjust_for_many_metrics(std::vector<MetricComparison>& metrics, double alpha) {
  std::vector<double> p;
  for (const auto& m : metrics)
    if (!m.test.empty()) p.push_back(m.p_value);
  const std::vector<double> adjusted = metrics::holm_adjusted(p);
  size_t i = 0;
  for (auto& m : metrics) {
    if (m.test.empty()) continue;
    m.p_adjusted = adjusted[i++];
    m.significant = m.p_adjusted < alpha;
  }
}

void flatten(const json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  out[prefix] = j.dump();
}

std::map<std::string, std::string> setup_fields(const json& r) {
  std::map<std::string, std::string> out;
  flatten(field(r, "resolved_recipe"), "recipe", out);
  flatten(field(r, "machine"), "machine", out);
  flatten(field(r, "software"), "software", out);
  flatten(field(r, "seeds"), "seeds", out);
  const json& context = field(r, "context");
  for (const char* key : {"git_revision", "compiler", "build_type", "settings", "threads"})
    if (context.is_object() && context.contains(key))
      flatten(context.at(key), cat("context.", key), out);
  return out;
}

}  // namespace

json load_run_results(const std::string& ref, const std::string& history_path) {
  std::string file = ref;
  std::error_code ec;
  if (all_digits(ref) && !fs::exists(ref, ec)) {
    DEEP500_CHECK(fs::exists(history_path, ec), "run ", ref, ": no history at ", history_path,
                  " (--history PATH)");
    file = (fs::path(
                History(history_path, History::Access::ReadOnly).run(std::stoll(ref)).results_dir) /
            "results.json")
               .string();
  } else if (fs::is_directory(ref, ec)) {
    file = (fs::path(ref) / "results.json").string();
  }
  DEEP500_CHECK(fs::exists(file, ec), ref, ": no such run, results folder or results.json (", file,
                ")");
  DEEP500_CHECK(!fs::exists(fs::path(file).parent_path() / kIncompleteMarker, ec), ref,
                ": an incomplete run (its folder holds ", kIncompleteMarker,
                ": deep500 run was stopped before it recorded the run)");
  const uint64_t size = regular_file_size(file);
  DEEP500_CHECK(size <= kMaxResultsBytes, file, ": ", size, " bytes; results.json is at most ",
                kMaxResultsBytes, " bytes");
  // A results.json nests a few levels; deeper input is refused while
  // parsing, before anything walks it recursively.
  bool too_deep = false;
  const json::parser_callback_t depth_check = [&](int depth, json::parse_event_t, json&) {
    too_deep = too_deep || depth > kMaxDepth;
    return !too_deep;
  };
  json j = json::parse(read_file(file), depth_check, false);
  DEEP500_CHECK(!too_deep, file, ": nested deeper than ", kMaxDepth, " levels");
  DEEP500_CHECK(!j.is_discarded(), file, ": not valid JSON");
  DEEP500_CHECK(field(j, "recipe").is_object() && field(j, "metrics").is_object() &&
                    field(j, "resolved_recipe").is_object(),
                file,
                ": not the results.json of a deep500 run (expected recipe, "
                "resolved_recipe and metrics)");
  j["results_file"] = file;
  return j;
}

std::vector<FieldDifference> setup_differences(const json& a, const json& b) {
  const auto fa = setup_fields(a), fb = setup_fields(b);
  std::vector<FieldDifference> out;
  for (const auto& [field, value] : fa) {
    auto other = fb.find(field);
    if (other == fb.end())
      out.push_back({field, value, "(absent)"});
    else if (other->second != value)
      out.push_back({field, value, other->second});
  }
  for (const auto& [field, value] : fb)
    if (!fa.count(field)) out.push_back({field, "(absent)", value});
  return out;
}

RunComparison compare_runs(const json& a, const json& b, double alpha) {
  RunComparison c;
  c.a = describe_run(a);
  c.b = describe_run(b);
  const json &ma = field(a, "metrics"), &mb = field(b, "metrics");
  if (ma.is_object() && mb.is_object())
    for (auto it = ma.begin(); it != ma.end(); ++it) {
      const json& other = field(mb, it.key().c_str());
      if (field(it.value(), "value").is_number() && field(other, "value").is_number())
        c.metrics.push_back(compare_metric(it.key(), it.value(), other, alpha));
    }
  adjust_for_many_metrics(c.metrics, alpha);
  c.differences = setup_differences(a, b);
  return c;
}

std::string format_comparison(const RunComparison& c) {
  std::string out = cat("A: ", c.a, "\nB: ", c.b, "\n");
  char line[256];
  std::snprintf(line, sizeof line, "%-22s %12s %12s %8s %-19s  %-24s %9s %9s  %s\n", "metric", "A",
                "B", "B/A", " [95% interval]", "test", "p", "p (Holm)", "verdict");
  out += line;
  for (const auto& m : c.metrics) {
    const std::string ratio = m.a != 0 ? short_number(m.b / m.a, 4) : "-";
    const std::string interval =
        std::isfinite(m.ratio_low)
            ? cat(" [", short_number(m.ratio_low, 4), ", ", short_number(m.ratio_high, 4), "]")
            : "";
    const std::string p = m.test.empty() ? "-" : short_number(m.p_value, 4);
    const std::string holm = m.test.empty() ? "-" : short_number(m.p_adjusted, 4);
    const char* verdict = m.test.empty()  ? (m.a == m.b ? "same" : "untested (one value each)")
                          : m.significant ? "differs"
                                          : "no significant difference";
    std::snprintf(line, sizeof line, "%-22s %12s %12s %8s %-19s  %-24s %9s %9s  %s\n",
                  m.name.c_str(), short_number(m.a).c_str(), short_number(m.b).c_str(),
                  ratio.c_str(), interval.c_str(), (m.test.empty() ? "-" : m.test).c_str(),
                  p.c_str(), holm.c_str(), verdict);
    out += line;
  }
  out += c.differences.empty() ? "setup: the same (recipe, machine, software, revision, seeds)\n"
                               : cat("setup differences (", c.differences.size(), "):\n");
  for (const auto& d : c.differences) out += cat("  ", d.field, ": ", d.a, " -> ", d.b, "\n");
  return out;
}

std::vector<std::string> regressions(const RunComparison& c, const std::string& objectives) {
  std::vector<std::string> out;
  for (const Objective& o : parse_objectives(objectives)) {
    auto m = std::find_if(c.metrics.begin(), c.metrics.end(),
                          [&](const MetricComparison& x) { return x.name == o.metric; });
    DEEP500_CHECK(m != c.metrics.end(), "--fail-on-regression: ", o.metric,
                  " was not measured by both runs, so no regression can be judged on it");
    const bool worse = o.maximize ? m->b < m->a : m->b > m->a;
    if (m->significant && worse)
      out.push_back(cat(o.metric, " ", short_number(m->a), " -> ", short_number(m->b), " (",
                        o.maximize ? "higher" : "lower", " is better; p ",
                        short_number(m->p_adjusted, 3), " after Holm's adjustment)"));
  }
  return out;
}

}  // namespace deep500::recipes
