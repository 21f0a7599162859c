#include "metrics/reporter.h"

#include <regex>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "metrics/json_reporter.h"

namespace deep500::metrics {
namespace {

struct Noop : Workload {
  void run() override {}
  Counters counters() const override { return {1e3, 2e3, 1}; }
  std::string name() const override { return "noop"; }
};

Result sample_result() {
  RunnerSettings s;
  s.warmup = 2;
  s.min_repetitions = 12;
  s.max_repetitions = 12;
  s.min_time_seconds = 0;
  Noop w;
  Result r = Runner(s).run(w);
  r.labels = {{"backend", "reference"}, {"shape", "a,b"}};
  return r;
}

TEST(MetricsReporter, JsonParsesAndCarriesContextAndSettings) {
  Context c = collect_context();
  std::ostringstream out;
  make_json_reporter(out)->report(c, {sample_result()});
  nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["format_version"], kResultFormatVersion);
  ASSERT_TRUE(j.contains("context"));
  EXPECT_EQ(j["context"]["cpu_model"], c.cpu_model);
  EXPECT_FALSE(j["context"]["git_revision"].get<std::string>().empty());
  EXPECT_TRUE(j["context"]["libraries"].contains("protobuf"));
  EXPECT_EQ(j["context"]["libraries"]["onnx"], "1.12.0");
  EXPECT_TRUE(j["context"]["threads"].contains("OMP_NUM_THREADS"));
  ASSERT_EQ(j["results"].size(), 1u);
  const auto& r = j["results"][0];
  EXPECT_EQ(r["name"], "noop");
  EXPECT_EQ(r["labels"]["backend"], "reference");
  EXPECT_EQ(r["settings"]["warmup"], 2);
  EXPECT_EQ(r["settings"]["min_repetitions"], 12);
  EXPECT_EQ(r["seconds"].size(), 12u);
  EXPECT_EQ(r["statistics"]["n"], 12);
  EXPECT_EQ(r["counters"]["flops"], 1e3);
}

TEST(MetricsReporter, CsvHasOneColumnPerFieldAndQuotesWhereNeeded) {
  std::ostringstream out;
  Context c;
  c.cpu_model = "Some CPU, 2 sockets";
  Result other = sample_result();
  other.labels = {{"problem", "m8n8k8"}};
  make_csv_reporter(out)->report(c, {sample_result(), sample_result(), other});
  std::istringstream in(out.str());
  std::string header, row;
  std::getline(in, header);
  // One column per label key, in order of first appearance.
  EXPECT_EQ(header.rfind("name,backend,shape,problem,repetitions,", 0), 0u) << header;
  std::vector<std::string> rows;
  while (std::getline(in, row)) rows.push_back(row);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].rfind("noop,reference,\"a,b\",,12,", 0), 0u) << rows[0];
  EXPECT_EQ(rows[2].rfind("noop,,,m8n8k8,12,", 0), 0u) << rows[2];
  EXPECT_NE(rows[0].find("\"Some CPU, 2 sockets\""), std::string::npos) << rows[0];
}

TEST(MetricsReporter, GbenchHasOneEntryPerRepetitionAndAggregates) {
  std::ostringstream out;
  Result r = sample_result();
  r.labels.push_back({"implementation", "reference:Noop"});
  make_gbench_reporter(out)->report(collect_context(), {r});
  nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["context"]["deep500"]["format_version"], kResultFormatVersion);
  const auto& b = j["benchmarks"];
  ASSERT_EQ(b.size(), 12u + 4u);
  EXPECT_EQ(b[0]["name"], "noop/reference/a,b");  // implementation is the label, not the name
  EXPECT_EQ(b[0]["label"], "reference:Noop");
  EXPECT_EQ(b[0]["run_type"], "iteration");
  EXPECT_EQ(b[11]["repetition_index"], 11);
  EXPECT_DOUBLE_EQ(b[3]["real_time"].get<double>(), r.seconds[3] * 1e9);
  EXPECT_EQ(b[3]["time_unit"], "ns");
  EXPECT_EQ(b[13]["name"], "noop/reference/a,b_median");
  EXPECT_EQ(b[13]["aggregate_name"], "median");
  EXPECT_DOUBLE_EQ(b[13]["real_time"].get<double>(), r.summary.median * 1e9);
}

TEST(MetricsReporter, ConsoleShowsTheTable) {
  std::ostringstream out;
  make_console_reporter(out)->report(collect_context(), {sample_result()});
  EXPECT_NE(out.str().find("95% CI"), std::string::npos);
  EXPECT_NE(out.str().find("backend"), std::string::npos);  // a column per label key
  EXPECT_NE(out.str().find("noop  "), std::string::npos);
  EXPECT_NE(out.str().find("reference"), std::string::npos);
}

TEST(MetricsReporter, FormatSecondsPicksAUnit) {
  EXPECT_EQ(format_seconds(1.5e-6), "1.5 us");
  EXPECT_EQ(format_seconds(0.0123), "12.3 ms");
  EXPECT_EQ(format_seconds(2.0), "2 s");
  EXPECT_EQ(format_seconds(4e-9), "4 ns");
}

TEST(MetricsContext, ParsesCpuinfo) {
  Context c;
  parse_cpuinfo(
      "processor\t: 0\nmodel name\t: Test CPU @ 2.0GHz\n"
      "flags\t\t: fpu sse4_2 avx avx2 fma avx512f amx_tile\n"
      "processor\t: 1\nmodel name\t: Test CPU @ 2.0GHz\n",
      c);
  EXPECT_EQ(c.cpu_model, "Test CPU @ 2.0GHz");
  EXPECT_EQ(c.isa, "sse4_2 avx avx2 fma avx512f amx_tile");
  Context none;
  parse_cpuinfo("", none);
  EXPECT_EQ(none.cpu_model, "unknown");
}

TEST(MetricsContext, CollectsMachineAndBuild) {
  Context c = collect_context();
  EXPECT_TRUE(std::regex_match(c.timestamp_utc, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << c.timestamp_utc;
  EXPECT_GE(c.logical_cpus, 1);
  EXPECT_GE(c.affinity_cpus, 1);
  EXPECT_FALSE(c.hostname.empty());
  EXPECT_FALSE(c.compiler.empty());
  EXPECT_NE(c.build_type, "");
}

}  // namespace
}  // namespace deep500::metrics
