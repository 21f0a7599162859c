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

TEST(MetricsReporter, CsvHasHeaderAndQuotedFields) {
  std::ostringstream out;
  Context c;
  c.cpu_model = "Some CPU, 2 sockets";
  make_csv_reporter(out)->report(c, {sample_result(), sample_result()});
  std::istringstream in(out.str());
  std::string header, row;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("name,labels,repetitions,", 0), 0u);
  int rows = 0;
  while (std::getline(in, row)) {
    ++rows;
    EXPECT_EQ(row.rfind("noop,", 0), 0u) << row;
    EXPECT_NE(row.find("\"backend=reference;shape=a,b\""), std::string::npos) << row;
    EXPECT_NE(row.find("\"Some CPU, 2 sockets\""), std::string::npos) << row;
  }
  EXPECT_EQ(rows, 2);
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
