// Chrome trace-event JSON: the fields Perfetto / chrome://tracing read.
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "deep/error.h"
#include "metrics/chrome_trace.h"

using namespace deep500;

TEST(ChromeTrace, WritesCompleteAndMetadataEvents) {
  metrics::ChromeTrace trace;
  trace.name_process(3, "proc");
  trace.add({"conv1", "forward", 10.5, 2.25, 3, 7, {{"op_type", "Conv"}, {"backend", "onednn"}}});
  trace.add({"relu", "forward", 13, 1, 3, 7, {}});
  std::stringstream s;
  trace.write(s);
  auto j = nlohmann::json::parse(s.str());
  const auto& ev = j.at("traceEvents");
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].at("ph"), "M");
  EXPECT_EQ(ev[0].at("args").at("name"), "proc");
  const auto& x = ev[1];
  EXPECT_EQ(x.at("ph"), "X");
  EXPECT_EQ(x.at("name"), "conv1");
  EXPECT_EQ(x.at("cat"), "forward");
  EXPECT_DOUBLE_EQ(x.at("ts").get<double>(), 10.5);
  EXPECT_DOUBLE_EQ(x.at("dur").get<double>(), 2.25);
  EXPECT_EQ(x.at("pid"), 3);
  EXPECT_EQ(x.at("tid"), 7);
  EXPECT_EQ(x.at("args").at("op_type"), "Conv");
  EXPECT_EQ(x.at("args").at("backend"), "onednn");
  EXPECT_TRUE(ev[2].at("args").is_object());
}

TEST(ChromeTrace, UnwritablePathIsANamedError) {
  metrics::ChromeTrace trace;
  try {
    trace.write(std::string("/nonexistent-dir/trace.json"));
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/trace.json"), std::string::npos);
  }
}
