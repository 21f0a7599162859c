#include "recipes/judging/criteria.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string_view>

#include "deep/error.h"
#include "deep/text.h"
#include "recipes/judging/reference_band.h"

namespace deep500::recipes {

namespace {

bool compare(double value, const std::string& op, double bound) {
  if (op == ">=") return value >= bound;
  if (op == ">") return value > bound;
  if (op == "<=") return value <= bound;
  if (op == "<") return value < bound;
  return value == bound;
}

double unit_scale(const std::string& unit) {
  if (unit.empty() || unit == "s") return 1;
  if (unit == "ms") return 1e-3;
  if (unit == "us") return 1e-6;
  if (unit == "%") return 1e-2;
  return 0;
}

// A value in seconds shown in the criterion's unit ("12.5 ms").
std::string in_unit(double seconds, const std::string& unit) {
  const std::string u = unit.empty() ? "s" : unit;
  return cat(short_number(seconds / unit_scale(u)), " ", u);
}

// Training time when test_accuracy first reached `target`; -1 if never.
double time_to_accuracy(const Measurements& m, double target) {
  auto acc = m.per_epoch.find("test_accuracy");
  auto t = m.per_epoch.find("elapsed_seconds");
  if (acc == m.per_epoch.end() || t == m.per_epoch.end()) return -1;
  for (size_t i = 0; i < acc->second.size() && i < t->second.size(); ++i)
    if (acc->second[i] >= target) return t->second[i];
  return -1;
}

Verdict against_reference(const Criterion& c, const Measurements& m, const ReferenceLog& ref) {
  Verdict v{c.text, true, ""};
  for (const auto& [name, e] : ref.metrics) {
    auto got = m.final_values.find(name);
    const double tol = c.percent >= 0 ? c.percent / 100 * std::fabs(e.value) : allowed_deviation(e);
    const bool ok = got != m.final_values.end() && std::fabs(got->second - e.value) <= tol;
    v.passed = v.passed && ok;
    v.detail += cat(v.detail.empty() ? "" : "; ", name, " ",
                    got == m.final_values.end() ? "not measured" : short_number(got->second),
                    " vs ", short_number(e.value), " +- ", short_number(tol));
  }
  return v;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> w;
  for (std::string word; in >> word;) w.push_back(word);
  return w;
}

// "at A%" after a reference-ensemble form (`rest` from its index `from`).
void parse_alpha(Criterion& c, const std::vector<std::string>& w, size_t from, const char* form) {
  if (w.size() == from) return;
  double percent = 0;
  DEEP500_CHECK(w.size() == from + 2 && w[from] == "at" && w[from + 1].size() > 1 &&
                    w[from + 1].back() == '%' &&
                    parse_float(w[from + 1].substr(0, w[from + 1].size() - 1), percent) &&
                    percent > 0 && percent < 50,
                "criterion '", c.text, "': expected ", form,
                " [at A%] with 0 < A < 50, e.g. 'at 5%'");
  c.alpha = percent / 100;
}

// METRIC OP NUMBER, the condition inside epochs_to(...).
void parse_condition(Criterion& c, const std::string& inner) {
  const auto w = words(inner);
  DEEP500_CHECK(w.size() == 3 && (w[1] == ">=" || w[1] == ">" || w[1] == "<=" || w[1] == "<") &&
                    parse_float(w[2], c.bound) && std::isfinite(c.bound),
                "criterion '", c.text,
                "': expected epochs_to(METRIC OP NUMBER) with OP one of >= > <= <, e.g. "
                "epochs_to(test_accuracy >= 0.88)");
  c.metric = w[0];
  c.op = w[1];
}

// epochs_to(COND) within the reference distribution | no faster than the
// reference [at A%].
constexpr std::string_view kEpochsTo = "epochs_to(";

Criterion parse_epochs_to(Criterion c) {
  const size_t close = c.text.find(')');
  DEEP500_CHECK(close != std::string::npos, "criterion '", c.text, "': epochs_to( has no ')'");
  parse_condition(c, c.text.substr(kEpochsTo.size(), close - kEpochsTo.size()));
  const auto w = words(c.text.substr(close + 1));
  const std::string rest = join(w, " ");
  if (rest == "within the reference distribution") {
    c.ensemble_test = "distribution";
    return c;
  }
  const char* faster = "'no faster than the reference'";
  DEEP500_CHECK(w.size() >= 5 && join(std::vector<std::string>(w.begin(), w.begin() + 5), " ") ==
                                     "no faster than the reference",
                "criterion '", c.text,
                "': expected epochs_to(COND) followed by 'within the reference distribution' or ",
                faster);
  c.ensemble_test = "no_faster";
  parse_alpha(c, w, 5, faster);
  return c;
}

// METRIC curve within the reference band [at A%].
Criterion parse_band(Criterion c, const std::vector<std::string>& w) {
  const char* form = "'METRIC curve within the reference band'";
  DEEP500_CHECK(w.size() >= 6 && join(std::vector<std::string>(w.begin() + 2, w.begin() + 6),
                                      " ") == "within the reference band",
                "criterion '", c.text, "': expected ", form);
  c.metric = w[0];
  c.ensemble_test = "band";
  parse_alpha(c, w, 6, form);
  return c;
}

}  // namespace

bool is_duration(const std::string& metric) {
  auto ends = [&](const std::string& tail) {
    return metric.size() >= tail.size() &&
           metric.compare(metric.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (metric.find("_per_") != std::string::npos) return false;  // a rate: samples_per_second
  return metric == "time_to_accuracy" || metric.find("latency") != std::string::npos ||
         ends("seconds") || ends("_s");
}

std::string metric_unit(const std::string& metric) {
  auto has = [&](const char* part) { return metric.find(part) != std::string::npos; };
  if (is_duration(metric)) return "s";
  if (has("samples_per_second")) return "samples/s";
  if (has("gflops")) return "GFLOP/s";
  if (has("gbytes_per_second")) return "GB/s";
  if (has("percent")) return "%";
  if (has("_bytes")) return "bytes";
  if (has("accuracy") || has("pass_rate")) return "fraction";
  return "";
}

double allowed_deviation(const ExpectedMetric& e) {
  return e.relative ? e.tolerance / 100 * std::fabs(e.value) : e.tolerance;
}

Criterion parse_criterion(const std::string& text) {
  Criterion c;
  c.text = text;
  std::vector<std::string> w = words(text);
  const std::string what = cat("criterion '", text, "'");
  if (text.rfind(kEpochsTo, 0) == 0) return parse_epochs_to(c);
  if (w.size() >= 2 && w[1] == "curve") return parse_band(c, w);
  if (!w.empty() && w[0] == "within") {
    c.against_reference = true;
    const std::string tail = join(std::vector<std::string>(w.begin() + 1, w.end()), " ");
    if (tail == "the reference log's tolerances") return c;
    DEEP500_CHECK(
        w.size() == 6 && w[1].size() > 1 && w[1].back() == '%' &&
            join(std::vector<std::string>(w.begin() + 2, w.end()), " ") == "of the reference log" &&
            parse_float(w[1].substr(0, w[1].size() - 1), c.percent) && c.percent >= 0,
        what,
        ": expected 'within X% of the reference log' or 'within the reference log's "
        "tolerances'");
    return c;
  }
  const char* form =
      ": expected METRIC OP NUMBER [UNIT] [by epoch N], e.g. 'test_accuracy >= 0.89 by epoch 5' "
      "or 'time_to_accuracy(0.88) <= 120 s'";
  DEEP500_CHECK(w.size() >= 3, what, form);
  c.metric = w[0];
  const size_t paren = c.metric.find('(');
  if (paren != std::string::npos) {
    DEEP500_CHECK(
        c.metric.back() == ')' &&
            parse_float(c.metric.substr(paren + 1, c.metric.size() - paren - 2), c.argument),
        what, ": expected NAME(NUMBER), got '", c.metric, "'");
    c.metric = c.metric.substr(0, paren);
  }
  c.op = w[1];
  DEEP500_CHECK(c.op == ">=" || c.op == ">" || c.op == "<=" || c.op == "<" || c.op == "==", what,
                ": expected a comparison >=, >, <=, < or ==, got '", c.op, "'");
  std::string number = w[2];
  size_t next = 3;
  std::string unit;
  if (!number.empty() && number.back() == '%') unit = "%", number.pop_back();
  if (next < w.size() && unit.empty() && w[next] != "by") unit = w[next++];
  DEEP500_CHECK(parse_float(number, c.bound) && std::isfinite(c.bound), what,
                ": expected a number after ", c.op, ", got '", w[2], "'");
  DEEP500_CHECK(unit_scale(unit) > 0, what, ": unknown unit '", unit, "' (known: s, ms, us, %)");
  DEEP500_CHECK(!is_duration(c.metric) || (!unit.empty() && unit != "%"), what, ": ", c.metric,
                " is a time: give its unit after the number (s, ms or us)");
  c.unit = unit;
  c.bound *= unit_scale(unit);
  if (next < w.size()) {
    DEEP500_CHECK(w.size() == next + 3 && w[next] == "by" && w[next + 1] == "epoch" &&
                      parse_int(w[next + 2], c.by_epoch) && c.by_epoch >= 1,
                  what, form);
  }
  return c;
}

void check_criterion(const Criterion& c, const std::vector<std::string>& known,
                     const ReferenceLog* reference, int64_t batch) {
  if (!c.ensemble_test.empty() && std::find(known.begin(), known.end(), c.metric) != known.end()) {
    check_reference_criterion(c, reference, batch);
    return;
  }
  if (c.against_reference) {
    DEEP500_CHECK(reference, "criterion '", c.text, "': the recipe has no reference_log");
    return;
  }
  if (std::find(known.begin(), known.end(), c.metric) != known.end()) return;
  const std::string hint = closest_name(c.metric, known);
  throw Error(cat("criterion '", c.text, "': unknown metric '", c.metric, "'",
                  hint.empty() ? "" : cat(" (did you mean '", hint, "'?)"),
                  "; this task measures: ", join(known, ", ")));
}

Verdict evaluate(const Criterion& c, const Measurements& m, const ReferenceLog* reference,
                 int64_t batch) {
  if (c.against_reference) return against_reference(c, m, *reference);
  if (!c.ensemble_test.empty()) return judge_against_ensembles(c, m, *reference, batch);
  Verdict v{c.text, false, ""};
  if (c.metric == "time_to_accuracy") {
    const double t = time_to_accuracy(m, c.argument);
    if (t < 0) {
      v.detail = cat("test accuracy never reached ", short_number(c.argument));
      return v;
    }
    v.passed = compare(t, c.op, c.bound);
    v.detail = in_unit(t, c.unit);
    return v;
  }
  if (c.by_epoch > 0) {
    auto series = m.per_epoch.find(c.metric);
    const auto& values = series == m.per_epoch.end() ? std::vector<double>{} : series->second;
    if (const int64_t e = first_epoch_meeting(c, m, c.by_epoch); e > 0) {
      v.passed = true;
      v.detail = cat(short_number(values[static_cast<size_t>(e - 1)]), " at epoch ", e);
      return v;
    }
    v.detail =
        values.empty()
            ? "no epoch measured"
            : cat("not by epoch ", c.by_epoch, " (epoch ",
                  std::min<int64_t>(c.by_epoch, values.size()), ": ",
                  short_number(values[std::min<size_t>(c.by_epoch, values.size()) - 1]), ")");
    return v;
  }
  auto value = m.final_values.find(c.metric);
  if (value == m.final_values.end()) {
    v.detail = "not measured";
    return v;
  }
  v.passed = compare(value->second, c.op, c.bound);
  v.detail = is_duration(c.metric) ? in_unit(value->second, c.unit) : short_number(value->second);
  return v;
}

int64_t first_epoch_meeting(const Criterion& c, const Measurements& m, int64_t last) {
  auto series = m.per_epoch.find(c.metric);
  if (series == m.per_epoch.end()) return 0;
  const auto& values = series->second;
  for (size_t i = 0; i < values.size() && (last <= 0 || static_cast<int64_t>(i) < last); ++i)
    if (compare(values[i], c.op, c.bound)) return static_cast<int64_t>(i) + 1;
  return 0;
}

}  // namespace deep500::recipes
