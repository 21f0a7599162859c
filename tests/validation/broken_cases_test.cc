// The conformance runner turns broken test folders into failed rows naming
// the broken file, and survives crashes and hangs of a case.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <onnx/onnx_pb.h>

#include "frameworks/register_all.h"
#include "validation/onnx_conformance.h"

namespace fs = std::filesystem;
using namespace deep500::validation;

namespace {

const fs::path kAdd = fs::path(DEEP500_ONNX_TESTDATA) / "node" / "test_add";

fs::path fresh_copy(const std::string& name) {
  deep500::frameworks::register_all();  // ctest runs each test in its own process
  fs::path dir = fs::temp_directory_path() / ("deep500_broken_" + name);
  fs::remove_all(dir);
  fs::copy(kAdd, dir, fs::copy_options::recursive);
  return dir;
}

void truncate_file(const fs::path& p) {
  auto size = fs::file_size(p);
  fs::resize_file(p, size / 2);
}

}  // namespace

TEST(BrokenCases, IntactCasePasses) {
  deep500::frameworks::register_all();
  auto r = run_case_isolated(fresh_copy("intact").string(), {});
  EXPECT_EQ(r.status, CaseStatus::Passed) << r.message;
}

TEST(BrokenCases, TruncatedModelIsAFailedRowNamingTheFile) {
  auto dir = fresh_copy("model");
  truncate_file(dir / "model.onnx");
  auto r = run_case_isolated(dir.string(), {});
  EXPECT_EQ(r.status, CaseStatus::Failed);
  EXPECT_NE(r.message.find("model.onnx"), std::string::npos) << r.message;
}

TEST(BrokenCases, CorruptPbIsAFailedRowNamingTheFile) {
  auto dir = fresh_copy("pb");
  std::ofstream(dir / "test_data_set_0" / "input_0.pb", std::ios::trunc) << "\x0a\xff\xff garbage";
  auto r = run_case_isolated(dir.string(), {});
  EXPECT_EQ(r.status, CaseStatus::Failed);
  EXPECT_NE(r.message.find("input_0.pb"), std::string::npos) << r.message;
}

TEST(BrokenCases, WrongExpectedOutputFailsWithTheWorstIndex) {
  auto dir = fresh_copy("output");
  // Replace the expected output with the first input: same shape, other values.
  fs::copy_file(dir / "test_data_set_0" / "input_0.pb", dir / "test_data_set_0" / "output_0.pb",
                fs::copy_options::overwrite_existing);
  auto r = run_case_isolated(dir.string(), {});
  EXPECT_EQ(r.status, CaseStatus::Failed);
  EXPECT_NE(r.message.find("worst at index"), std::string::npos) << r.message;
}

TEST(BrokenCases, HangBecomesATimeoutRow) {
  ConformanceOptions opt;
  opt.timeout_seconds = 0.5;
  deep500::frameworks::register_all();
  fs::path dir = fs::temp_directory_path() / "deep500_broken_hang";
  fs::remove_all(dir);
  fs::copy(fs::path(DEEP500_ONNX_TESTDATA) / "node" / "test_loop11", dir,
           fs::copy_options::recursive);
  // A trip count of 10^7 - 1 instead of 5, just within the iteration limit
  // (a larger one is refused before running): the case runs for minutes.
  onnx::TensorProto trip;
  trip.set_data_type(onnx::TensorProto::INT64);
  trip.add_int64_data(9999999);
  std::ofstream(dir / "test_data_set_0" / "input_0.pb", std::ios::binary | std::ios::trunc)
      << trip.SerializeAsString();
  auto r = run_case_isolated(dir.string(), opt);
  EXPECT_EQ(r.status, CaseStatus::Failed);
  EXPECT_NE(r.message.find("timed out"), std::string::npos) << r.message;
}

TEST(BrokenCases, FifoInputIsAFailedRowNamingTheFile) {
  auto dir = fresh_copy("fifo");
  // A FIFO with no writer would block a reader forever: it is not read.
  fs::remove(dir / "test_data_set_0" / "input_0.pb");
  ASSERT_EQ(mkfifo((dir / "test_data_set_0" / "input_0.pb").c_str(), 0600), 0);
  auto r = run_case_isolated(dir.string(), {});
  EXPECT_EQ(r.status, CaseStatus::Failed);
  EXPECT_NE(r.message.find("input_0.pb: not a regular file"), std::string::npos) << r.message;
}
