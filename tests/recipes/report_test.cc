// The HTML report (recipes/results/report.h) from results.json files
// written here: what each page shows, escaped, with links relative to the
// page and plots inline, and bad results.json refused with the field
// named. The browser test (tests/report/report_browser_test.py) opens real
// runs' pages in headless Chromium.
#include "recipes/results/report.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include <gtest/gtest.h>

#include "deep/error.h"
#include "deep/onnx_tensor.h"
#include "recipes/judging/comparison.h"
#include "recipes/judging/criteria.h"
#include "recipes/results/html.h"

using namespace deep500;
using namespace deep500::recipes;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

class Report : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("deep500_report_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // results/<recipe>/<stamp>/results.json of a training run: 11 samples of
  // samples_per_second (1..11: median 6), two criteria, a band.
  fs::path write_run(const std::string& stamp, const std::string& label, double rate_scale = 1) {
    const fs::path dir = root_ / "results" / "lenet" / stamp;
    fs::create_directories(dir);
    json samples = json::array();
    for (int k = 1; k <= 11; ++k) samples.push_back(k * rate_scale);
    const json results = {
        {"recipe", {{"name", "lenet"}, {"version", "1.0.0"}, {"description", "LeNet-5"}}},
        {"label", label},
        {"resolved_recipe",
         {{"task", "training"},
          {"training", {{"epochs", 2}}},
          {"reference_log",
           {{"metrics", {{"train_loss", {{"value", 0.3}, {"tolerance", "5%"}}}}}}}}},
        {"status", "failed"},
        {"started_utc", "2026-11-28T00:00:00Z"},
        {"finished_utc", "2026-11-28T00:01:00Z"},
        {"task_seconds", 60.5},
        {"overrides", {{"training.epochs", "2"}}},
        {"machine", {{"cpu_model", "Test CPU"}, {"cores", 2}, {"hostname", "host-a"}}},
        {"software", {{"deep500", "0.1.0"}}},
        {"context", {{"git_revision", "abc1234"}}},
        {"seeds", {{"training", 1}, {"shuffle", 7}}},
        {"noise_audit",
         {{"governor", "performance"},
          {"cores", 2},
          {"warnings", {"another process was busy: spin (0.9 CPU)"}}}},
        {"metrics",
         {{"samples_per_second", {{"value", 6 * rate_scale}, {"samples", samples}}},
          {"test_accuracy", {{"value", 0.875}, {"per_epoch", {0.8, 0.875}}, {"trials", 10000}}},
          {"train_loss", {{"value", 0.31}}}}},
        {"criteria",
         {{{"criterion", "test_accuracy >= 0.8"}, {"passed", true}, {"detail", "0.875"}},
          {{"criterion", "train_loss curve within the reference band"},
           {"passed", false},
           {"detail", "epoch 2 outside"}}}},
        {"reference_figures",
         {{{"metric", "train_loss"},
           {"kind", "band"},
           {"mean", {0.5, 0.3}},
           {"low", {0.4, 0.25}},
           {"high", {0.6, 0.35}}}}}};
    std::ofstream(dir / "results.json") << results.dump(2);
    std::ofstream(dir / "metrics.csv") << "epoch,train_loss\n1,0.5\n";
    return dir;
  }
  fs::path root_;
};

TEST_F(Report, RunPageShowsVerdictsSetupMetricsAndReproduceCommand) {
  const fs::path dir = write_run("20261128T000000Z", "lr=<b>0.1</b>");
  const std::string page = read_file(write_run_report(dir.string()));
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  // The label is text, never markup.
  EXPECT_NE(page.find("lr=&lt;b&gt;0.1&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(page.find("<b>0.1</b>"), std::string::npos);
  EXPECT_EQ(count(page, ">PASS</span>"), 1u);
  EXPECT_EQ(count(page, ">FAIL</span>"), 1u);
  EXPECT_NE(page.find(">failed</span>"), std::string::npos);
  // Metrics: unit, value, the samples' median (6) and its interval.
  EXPECT_NE(page.find("<td>samples_per_second</td><td>samples/s</td><td>6</td><td>6</td><td>[2, 10]"
                      "</td><td>11</td>"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("<td>test_accuracy</td><td>fraction</td><td>0.875</td>"), std::string::npos);
  // The reference log's value and the band.
  EXPECT_NE(page.find("<td>0.3 ± 5%; band 0.3 [0.25, 0.35] at epoch 2</td>"), std::string::npos);
  EXPECT_NE(page.find("Test CPU, 2 cores"), std::string::npos);
  EXPECT_NE(page.find("abc1234"), std::string::npos);
  EXPECT_NE(page.find("<dd>shuffle 7, training 1</dd>"), std::string::npos);
  EXPECT_NE(page.find("training.epochs=2"), std::string::npos);
  EXPECT_NE(page.find("warning: another process was busy"), std::string::npos);
  EXPECT_NE(page.find("deep500 reproduce " + fs::absolute(dir).string() + " --output-dir " +
                      fs::absolute(root_ / "results").string()),
            std::string::npos);
  // Links relative to the page, to the files that exist only.
  EXPECT_NE(page.find("<a href=\"results.json\">"), std::string::npos);
  EXPECT_NE(page.find("<a href=\"metrics.csv\">"), std::string::npos);
  EXPECT_EQ(page.find("trace.json"), std::string::npos);
  EXPECT_NE(page.find("No plots in"), std::string::npos);
}

TEST_F(Report, PlotsAreInlinedWithoutTheirXmlProlog) {
  const fs::path dir = write_run("20261128T000000Z", "");
  std::ofstream(dir / "training_curves.svg")
      << "<?xml version=\"1.0\"?>\n<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
         "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n<svg width=\"10\"><rect/></svg>\n";
  std::ofstream(dir / "latency.svg") << "not an svg";
  const std::string page = read_file(write_run_report(dir.string()));
  EXPECT_EQ(count(page, "<svg"), 1u);
  EXPECT_NE(page.find("<figure><svg width=\"10\"><rect/></svg><figcaption>training curves"),
            std::string::npos);
  EXPECT_EQ(page.find("<?xml"), std::string::npos);
  EXPECT_EQ(page.find("DOCTYPE svg"), std::string::npos);
}

TEST_F(Report, ComparisonPageGivesTheRatioAndItsInterval) {
  const fs::path a = write_run("20261128T000000Z", "before");
  const fs::path b = write_run("20261128T000100Z", "after", 0.25);
  const ReportRun ra = report_run(a.string(), ""), rb = report_run(b.string(), "");
  const RunComparison c = compare_runs(ra.results, rb.results);
  const std::string page = comparison_report_html(ra, rb, c, {root_.string(), ""});
  // Every sample quartered: the Hodges-Lehmann ratio is exactly 0.25.
  EXPECT_NE(page.find("<td>samples_per_second</td><td>samples/s</td><td>6</td><td>1.5</td><td>0.25"
                      "</td><td>0.25 ["),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("<b>differs</b>"), std::string::npos);
  EXPECT_NE(page.find("<a href=\"results/lenet/20261128T000000Z/results.json\">"),
            std::string::npos);
  EXPECT_EQ(count(page, "<section id=\"run-"), 2u);
}

TEST_F(Report, HistoryPageMarksTheRunWhereARegressionStarts) {
  std::vector<RunRecord> runs(2);
  runs[0].id = 1, runs[1].id = 2;
  runs[0].recipe = runs[1].recipe = "lenet";
  runs[0].status = "passed", runs[1].status = "failed";
  runs[1].label = "<i>x</i>";
  RegressionReport found;
  found.series = 1;
  found.found.push_back({"lenet", "host", "", "seconds", 1, 2, 3, 3, 1.0, 1.2, 0.01, "samples"});
  const std::string page = history_report_html(runs, found, "seconds:min", {root_.string(), ""});
  EXPECT_NE(page.find("1 series of comparable runs checked on seconds:min: 1 open regression(s)"),
            std::string::npos);
  EXPECT_NE(page.find("<span class=\"changed\">2</span>"), std::string::npos);
  EXPECT_EQ(page.find("<span class=\"changed\">1</span>"), std::string::npos);
  EXPECT_NE(page.find("&lt;i&gt;x&lt;/i&gt;"), std::string::npos);
}

TEST_F(Report, ResultsThatAreNotARunsAreRefusedNamingTheFile) {
  const fs::path dir = root_ / "not-a-run";
  fs::create_directories(dir);
  EXPECT_THROW(write_run_report(dir.string()), Error);
  std::ofstream(dir / "results.json") << R"({"recipe": 3, "metrics": {}, "resolved_recipe": {}})";
  try {
    write_run_report(dir.string());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("results.json"), std::string::npos) << e.what();
  }
  // Fields of unexpected types are shown as they are, never a crash.
  std::ofstream(dir / "results.json") << R"({"recipe": {"name": 1}, "metrics": {"x": 5},
      "resolved_recipe": {}, "criteria": "none", "machine": [1], "noise_audit": {"warnings": 7},
      "reference_figures": [{"metric": "x", "kind": "band", "mean": [1], "low": 2}]})";
  EXPECT_NE(read_file(write_run_report(dir.string())).find("<td>x</td>"), std::string::npos);
}

TEST(MetricUnit, FromTheMetricsName) {
  EXPECT_EQ(metric_unit("latency.p90"), "s");
  EXPECT_EQ(metric_unit("compute_seconds"), "s");
  EXPECT_EQ(metric_unit("samples_per_second"), "samples/s");
  EXPECT_EQ(metric_unit("conv1.gflops"), "GFLOP/s");
  EXPECT_EQ(metric_unit("cpu.peak_gbytes_per_second"), "GB/s");
  EXPECT_EQ(metric_unit("conv1.percent_of_peak"), "%");
  EXPECT_EQ(metric_unit("test_accuracy"), "fraction");
  EXPECT_EQ(metric_unit("train_loss"), "");
}

TEST(Html, EscapesEveryCharacterThatEndsText) {
  EXPECT_EQ(html::escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(html::link("x\".html", "<y>"), "<a href=\"x&quot;.html\">&lt;y&gt;</a>");
}

}  // namespace
