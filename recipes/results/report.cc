#include "recipes/results/report.h"

#include <cmath>
#include <filesystem>

#include "deep/error.h"
#include "deep/output_file.h"
#include "deep/scratch_dir.h"
#include "deep/text.h"
#include "metrics/statistics.h"
#include "recipes/format/json_fields.h"
#include "recipes/judging/criteria.h"
#include "recipes/results/html.h"
#include "recipes/results/plots.h"
#include "recipes/results/study.h"

namespace deep500::recipes {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The plots scripts/plot_results.py draws, in the order the page shows them.
const std::vector<std::pair<std::string, std::string>> kPlots = {
    {"training_curves.svg", "training curves: loss and accuracy against epoch and time"},
    {"reference_band.svg", "the run against the reference's seed ensembles"},
    {"latency.svg", "latency distribution (p50, p90, p99 marked)"},
    {"operator_benchmark.svg", "operator throughput against the measured peak"},
    {"op_matrix.svg", "op matrix: time relative to the fastest backend"},
    {"conformance.svg", "conformance cases per suite"},
    {"study.svg", "scaling: speedup, efficiency and the time per rank"},
    {"scoreboard.svg", "scoreboard: the Pareto front"}};

// A JSON value as table text: strings as they are, numbers short.
std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return v.dump();  // seeds, counts: every digit
  if (v.is_number()) return short_number(v.get<double>());
  if (v.is_null()) return "";
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A map as "KEY VALUE, ..."; anything else as value_text.
std::string pairs_text(const json& j) {
  if (!j.is_object()) return value_text(j);
  std::vector<std::string> parts;
  for (const auto& [k, v] : j.items()) parts.push_back(k + " " + value_text(v));
  return join(parts, ", ");
}

std::string number_text(double v) {
  return std::isfinite(v) ? short_number(v) : "-";
}

// A link from the page to `file`: relative to the page's folder where one
// exists, else the absolute path.
std::string href(const fs::path& file, const std::string& page_dir) {
  std::error_code ec;
  const fs::path rel = fs::relative(fs::absolute(file, ec), fs::absolute(page_dir, ec), ec);
  return ec || rel.empty() ? fs::absolute(file, ec).string() : rel.string();
}

// Single quotes for the shell where the text needs them.
std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./=:,+@") == std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The title line of a run: recipe, version and (with_label) its label.
std::string run_title(const json& results, bool with_label = true) {
  const json& recipe = field(results, "recipe");
  const std::string label = with_label ? field_text(results, "label") : "";
  return cat(field_text(recipe, "name"), " ", field_text(recipe, "version"),
             label.empty() ? "" : " [" + label + "]");
}

std::string verdicts_html(const json& results) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : field(results, "criteria")) {
    const json& passed = field(c, "passed");
    const std::string verdict = passed.is_boolean() ? (passed.get<bool>() ? "PASS" : "FAIL") : "?";
    rows.push_back({html::status_badge(verdict), html::escape(field_text(c, "criterion")),
                    html::escape(field_text(c, "detail"))});
  }
  if (rows.empty()) return "<p>The recipe has no criteria.</p>\n";
  return html::table({"verdict", "criterion", "detail"}, rows, "verdicts");
}

// "NAME: VALUE" pairs as a definition list.
std::string card(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out = "<dl class=\"card\">";
  for (const auto& [name, value] : entries)
    if (!value.empty()) out += "<dt>" + html::escape(name) + "</dt><dd>" + value + "</dd>";
  return out + "</dl>\n";
}

std::string noise_html(const json& audit) {
  if (!audit.is_object()) return "not recorded (an ensemble's or a study's own run)";
  std::vector<std::string> known;  // unreadable values ("" or -1) left out
  for (const char* name : {"governor", "turbo", "smt", "cpu_quota", "affinity_cpus", "cores",
                           "load_before", "load_after", "steal_share"}) {
    const json& v = field(audit, name);
    if ((v.is_string() && !v.get<std::string>().empty()) || (v.is_number() && v.get<double>() >= 0))
      known.push_back(cat(name, " ", value_text(v)));
  }
  std::string out = html::escape(join(known, ", "));
  std::vector<std::string> busy;
  for (const auto& p : field(audit, "busy_before"))
    busy.push_back(cat(field_text(p, "name"), " (", value_text(field(p, "cpu_share")), " CPU)"));
  if (!busy.empty()) out += html::escape("; busy before: " + join(busy, ", "));
  for (const auto& w : field(audit, "warnings"))
    out += "<br><span class=\"warn\">warning: " + html::escape(value_text(w)) + "</span>";
  return out;
}

std::string setup_html(const json& results) {
  const json& machine = field(results, "machine");
  std::vector<std::string> software;
  for (const auto& [name, version] : field(results, "software").items())
    software.push_back(name + " " + value_text(version));
  std::vector<std::string> overrides;
  for (const auto& [path, value] : field(results, "overrides").items())
    overrides.push_back(path + "=" + value_text(value));
  const json& context = field(results, "context");
  const json& gpus = field(machine, "gpus");
  const std::string gpu_text =
      gpus.is_array() ? (gpus.empty() ? "no GPU" : cat(gpus.size(), " GPUs: ", value_text(gpus)))
                      : value_text(gpus);
  return card(
      {{"machine", html::escape(cat(value_text(field(machine, "cpu_model")), ", ",
                                    value_text(field(machine, "cores")), " cores, ",
                                    value_text(field(machine, "memory_gib")), " GiB, ", gpu_text))},
       {"host", html::escape(value_text(field(machine, "hostname")))},
       {"software", html::escape(join(software, ", "))},
       {"git revision", html::escape(value_text(field(context, "git_revision")))},
       {"settings",
        html::escape(overrides.empty() ? "the recipe's own (no --set)" : join(overrides, ", "))},
       {"seeds", html::escape(pairs_text(field(results, "seeds")))},
       {"noise audit", noise_html(field(results, "noise_audit"))}});
}

// The reference log's value and tolerance of `metric`, and the band at the
// last epoch of a band criterion on it.
std::string reference_text(const json& results, const std::string& metric) {
  std::vector<std::string> parts;
  const json& log = field(field(results, "resolved_recipe"), "reference_log");
  const json& expected = field(field(log, "metrics"), metric.c_str());
  if (field(expected, "value").is_number())
    parts.push_back(
        cat(value_text(field(expected, "value")), " ± ", value_text(field(expected, "tolerance"))));
  for (const auto& f : field(results, "reference_figures")) {
    if (field_text(f, "metric") != metric || field_text(f, "kind") != "band") continue;
    const auto mean = json_numbers(field(f, "mean")), low = json_numbers(field(f, "low")),
               high = json_numbers(field(f, "high"));
    if (mean.empty() || low.size() != mean.size() || high.size() != mean.size()) continue;
    parts.push_back(cat("band ", short_number(mean.back()), " [", short_number(low.back()), ", ",
                        short_number(high.back()), "] at epoch ", mean.size()));
  }
  return join(parts, "; ");
}

// The final value, or else the last epoch's.
std::string final_value_text(const json& value, const json& per_epoch) {
  if (value.is_number()) return number_text(value.get<double>());
  const std::vector<double> epochs = json_numbers(per_epoch);
  return epochs.empty() ? "" : cat(number_text(epochs.back()), " (epoch ", epochs.size(), ")");
}

std::string metrics_html(const json& results) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, entry] : field(results, "metrics").items()) {
    const json& value = field(entry, "value");
    const std::vector<double> samples = json_numbers(field(entry, "samples"));
    std::string median, interval;
    if (samples.size() >= 2) {
      const metrics::Summary s = metrics::summarize(samples);
      median = short_number(s.median);
      interval = cat("[", short_number(s.ci_low), ", ", short_number(s.ci_high), "]",
                     s.ci_valid ? "" : " (min, max)");
    }
    rows.push_back({html::escape(name), html::escape(metric_unit(name)),
                    html::escape(final_value_text(value, field(entry, "per_epoch"))), median,
                    html::escape(interval), std::to_string(samples.size()),
                    html::escape(reference_text(results, name))});
  }
  if (rows.empty()) return "<p>No metrics were measured.</p>\n";
  return html::table(
      {"metric", "unit", "value", "median of samples", "95% interval", "samples", "reference"},
      rows, "metrics");
}

// An ensemble's members, linked to their pages.
std::string members_html(const json& results, const std::string& page_dir) {
  const json& members = field(field(results, "ensemble"), "members");
  if (!members.is_array() || members.empty()) return "";
  std::vector<std::vector<std::string>> rows;
  for (const auto& m : members) {
    const std::string dir = field_text(m, "results_dir");
    rows.push_back(
        {html::escape(value_text(field(m, "run_id"))), html::status_badge(field_text(m, "status")),
         dir.empty() ? "" : html::link(href(fs::path(dir) / "report.html", page_dir), dir)});
  }
  return "<h3>Ensemble members</h3>\n" + html::table({"run", "status", "report"}, rows, "members");
}

std::string interval_text(const MetricEstimate& e) {
  if (!std::isfinite(e.ci_low)) return short_number(e.value);
  return cat(short_number(e.value), " [", short_number(e.ci_low), ", ", short_number(e.ci_high),
             "]");
}

// A study's table: each member with its speedup, efficiency and metrics.
std::string study_html(const json& results, const std::string& page_dir) {
  const json& j = field(results, "study");
  if (!j.is_object()) return "";
  const Study s = study_from_json(j);
  std::vector<std::string> header = {"member", "status", "run", "speedup", "efficiency"};
  for (const auto& m : s.shown) header.push_back(html::escape(m));
  std::vector<std::vector<std::string>> rows;
  for (const auto& m : s.members) {
    std::vector<std::string> row = {
        m.results_dir.empty()
            ? html::escape(m.label)
            : html::link(href(fs::path(m.results_dir) / "report.html", page_dir), m.label),
        html::status_badge(m.status), std::to_string(m.run_id), number_text(m.speedup),
        number_text(m.efficiency)};
    for (const auto& name : s.shown) {
      auto it = m.metrics.find(name);
      row.push_back(it == m.metrics.end() ? "" : html::escape(interval_text(it->second)));
    }
    rows.push_back(row);
  }
  return "<h3>Study</h3>\n<p>" +
         html::escape(cat("Speedup on ", s.speedup_metric, " against ", s.baseline,
                          "; efficiency = speedup x baseline ranks / ranks.")) +
         "</p>\n" + html::table(header, rows, "study");
}

// Every plot of `dir` the page shows, inline.
std::string plots_html(const std::string& dir) {
  std::string out;
  for (const auto& [file, caption] : kPlots)
    out += html::inline_svg((fs::path(dir) / file).string(), caption);
  return out.empty() ? "<p>No plots in " + html::escape(dir) +
                           " (run without --no-plots, with python3-matplotlib installed).</p>\n"
                     : out;
}

std::string links_html(const ReportRun& run, const std::string& page_dir) {
  std::vector<std::string> links;
  for (const char* file : {"results.json", "metrics.csv", "trace.json", "reference.yaml"}) {
    const fs::path path = fs::path(run.dir) / file;
    std::error_code ec;
    if (fs::exists(path, ec)) links.push_back(html::link(href(path, page_dir), file));
  }
  return "<p>Files: " + join(links, " · ") + "</p>\n";
}

// `deep500 reproduce` of the run, into the output folder it was run with.
std::string reproduce_command(const ReportRun& run) {
  const fs::path dir = fs::absolute(run.dir);
  return cat("deep500 reproduce ", shell_word(dir.string()), " --output-dir ",
             shell_word(dir.parent_path().parent_path().string()));
}

std::string run_html(const ReportRun& run, size_t k, const ReportPlace& place) {
  const json& r = run.results;
  std::string body =
      "<p>" + html::status_badge(field_text(r, "status")) + " " +
      html::escape(cat(field_text(field(r, "recipe"), "description"), " — task ",
                       field_text(field(r, "resolved_recipe"), "task"), ", started ",
                       field_text(r, "started_utc"), ", finished ", field_text(r, "finished_utc"),
                       ", ", value_text(field(r, "task_seconds")), " s")) +
      "</p>\n";
  body += "<h3>Verdicts</h3>\n" + verdicts_html(r);
  body += "<h3>Reproduce</h3>\n" + html::pre(reproduce_command(run));
  body += links_html(run, place.page_dir);
  body += "<h3>Setup</h3>\n" + setup_html(r);
  body += "<h3>Metrics</h3>\n" + metrics_html(r);
  body += members_html(r, place.page_dir) + study_html(r, place.page_dir);
  if (place.plots_dir.empty()) body += "<h3>Plots</h3>\n" + plots_html(run.dir);
  body +=
      "<details><summary>The recipe as it ran</summary>" +
      html::pre(field(r, "resolved_recipe").dump(2, ' ', false, json::error_handler_t::replace)) +
      "</details>\n";
  return html::section(cat("run-", k + 1), run_title(r), body);
}

}  // namespace

ReportRun report_run(const std::string& ref, const std::string& history_path) {
  ReportRun run;
  run.results = load_run_results(ref, history_path);
  run.dir = fs::path(run.results.at("results_file").get<std::string>()).parent_path().string();
  return run;
}

std::string runs_report_html(const std::vector<ReportRun>& runs, const ReportPlace& place) {
  DEEP500_CHECK(!runs.empty(), "deep500 report: no runs given");
  std::string body = "<h1>deep500 report: " + html::escape(run_title(runs.front().results, false)) +
                     (runs.size() > 1 ? html::escape(cat(" and ", runs.size() - 1, " more")) : "") +
                     "</h1>\n";
  for (size_t k = 0; k < runs.size(); ++k) body += run_html(runs[k], k, place);
  if (!place.plots_dir.empty())
    body += html::section("plots", "Plots of every run", plots_html(place.plots_dir));
  return html::page("deep500 report: " + run_title(runs.front().results, false), body);
}

std::string comparison_report_html(const ReportRun& a, const ReportRun& b, const RunComparison& c,
                                   const ReportPlace& place) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& m : c.metrics) {
    const bool sampled = std::isfinite(m.ratio);
    rows.push_back({html::escape(m.name), html::escape(metric_unit(m.name)), short_number(m.a),
                    short_number(m.b), m.a != 0 ? short_number(m.b / m.a) : "-",
                    sampled
                        ? html::escape(cat(short_number(m.ratio), " [", short_number(m.ratio_low),
                                           ", ", short_number(m.ratio_high), "]"))
                        : "",
                    html::escape(m.test.empty() ? "untested (one value each)" : m.test),
                    m.test.empty() ? "" : short_number(m.p_value),
                    m.test.empty() ? "" : short_number(m.p_adjusted),
                    m.test.empty() ? "" : (m.significant ? "<b>differs</b>" : "no evidence")});
  }
  std::string body = "<h1>deep500 compare</h1>\n<p>A: " + html::escape(c.a) +
                     "<br>B: " + html::escape(c.b) + "</p>\n";
  body += html::section(
      "metrics", "Metrics",
      "<p>Ratio B/A; where both runs recorded samples, the Hodges-Lehmann ratio with its 95% "
      "interval and a rank test; p-values Holm-adjusted over every tested metric.</p>\n" +
          html::table({"metric", "unit", "A", "B", "B/A", "ratio [95% interval]", "test", "p",
                       "p (Holm)", "verdict"},
                      rows, "comparison"));
  std::vector<std::vector<std::string>> differences;
  for (const auto& d : c.differences)
    differences.push_back({html::escape(d.field), html::escape(d.a), html::escape(d.b)});
  body += html::section("setup", "Setup differences",
                        differences.empty()
                            ? "<p>The setups do not differ.</p>\n"
                            : html::table({"field", "A", "B"}, differences, "differences"));
  for (const auto* run : {&a, &b}) body += run_html(*run, run == &a ? 0 : 1, place);
  if (!place.plots_dir.empty())
    body += html::section("plots", "Plots of both runs", plots_html(place.plots_dir));
  return html::page("deep500 compare: " + run_title(a.results) + " vs " + run_title(b.results),
                    body);
}

std::string history_report_html(const std::vector<RunRecord>& runs,
                                const RegressionReport& regressions, const std::string& objectives,
                                const ReportPlace& place) {
  std::string body = "<h1>deep500 history</h1>\n";
  std::vector<std::vector<std::string>> found;
  for (const auto& g : regressions.found)
    found.push_back({html::escape(g.recipe), html::escape(g.label), html::escape(g.metric),
                     std::to_string(g.first_after), short_number(g.median_before),
                     short_number(g.median_after), short_number(g.p_value),
                     html::escape(g.confirmed)});
  body += html::section(
      "regressions", "Regressions",
      "<p>" +
          html::escape(cat(regressions.series, " series of comparable runs checked on ", objectives,
                           ": ", regressions.found.size(), " open regression(s)")) +
          ".</p>\n" +
          (found.empty() ? std::string()
                         : html::table({"recipe", "label", "metric", "from run", "median before",
                                        "median after", "p", "confirmed"},
                                       found, "regressions")));
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : runs) {
    bool changed = false;
    for (const auto& g : regressions.found) changed = changed || g.first_after == r.id;
    std::vector<std::string> metric_text;
    for (const auto& [name, value] : r.metrics)
      metric_text.push_back(cat(name, "=", short_number(value)));
    rows.push_back(
        {(changed ? "<span class=\"changed\">" : "<span>") + std::to_string(r.id) + "</span>",
         html::escape(r.started_utc), html::escape(r.recipe + " " + r.recipe_version),
         html::escape(r.label), html::status_badge(r.status), html::escape(r.git_revision),
         html::link(href(fs::path(r.results_dir) / "report.html", place.page_dir), "report"),
         html::escape(join(metric_text, " "))});
  }
  body += html::section("runs", "Runs",
                        html::table({"run", "started (UTC)", "recipe", "label", "status",
                                     "git revision", "page", "metrics"},
                                    rows, "runs"));
  if (!place.plots_dir.empty())
    body += html::section("plots", "Plots", plots_html(place.plots_dir));
  return html::page("deep500 history", body);
}

std::string write_report(const ReportRequest& r) {
  DEEP500_CHECK(!(r.compare && r.history), "deep500 report: --compare or --history, not both");
  DEEP500_CHECK(!r.compare || r.runs.size() == 2,
                "deep500 report --compare: expected two runs, A B; got ", r.runs.size());
  DEEP500_CHECK(r.history || !r.runs.empty(),
                "deep500 report: expected runs (history ids or results folders), --compare A B "
                "or --history");
  DEEP500_CHECK(!r.history || r.runs.empty(),
                "deep500 report --history: takes no runs (choose them with --recipe and --since)");
  const fs::path out = fs::absolute(r.out);
  const ReportPlace place{out.parent_path().string(), ""};
  std::string page, note;
  if (r.history) {
    History h(r.history_path, History::Access::ReadOnly);
    const auto recorded = h.runs(r.recipe, r.since);
    page = history_report_html(
        recorded, find_regressions(recorded, r.metrics, h.accepted_changes(), recorded_samples),
        r.metrics, place);
  } else {
    std::vector<ReportRun> runs;
    for (const auto& ref : r.runs) runs.push_back(report_run(ref, r.history_path));
    const ScratchDir together("report", "the plots of the runs together");
    ReportPlace with_plots = place;
    if (r.plots && runs.size() > 1) {
      std::vector<std::string> dirs;
      for (const auto& run : runs) dirs.push_back(run.dir);
      note = render_plots(dirs, together.path().string());
      with_plots.plots_dir = together.path().string();
    }
    page = r.compare
               ? comparison_report_html(runs[0], runs[1],
                                        compare_runs(runs[0].results, runs[1].results), with_plots)
               : runs_report_html(runs, with_plots);
  }
  write_output_file(out.string(), {page}, "writing the report");
  return note;
}

std::string write_run_report(const std::string& results_dir) {
  const ReportRun run = report_run(results_dir, "");
  const std::string file = (fs::path(results_dir) / "report.html").string();
  write_output_file(file, {runs_report_html({run}, {results_dir, ""})}, "writing report.html");
  return file;
}

}  // namespace deep500::recipes
