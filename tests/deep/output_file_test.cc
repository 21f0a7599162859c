// Output files (deep/output_file.h): atomic replace of regular files, in-place
// writes to devices, links followed, everything else refused, every write
// checked — nothing a user owns is replaced or silently truncated.
#include "deep/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/error_of.h"

namespace deep500 {
namespace {

namespace fs = std::filesystem;
using test::error_of;

class OutputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("deep500_output_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static bool is_char_device(const char* path) {
    struct stat st {};
    return ::stat(path, &st) == 0 && S_ISCHR(st.st_mode);
  }
  size_t entries() const {
    return static_cast<size_t>(
        std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }
  fs::path dir_;
};

TEST_F(OutputFile, RegularFilesAreReplacedWholeWithNoTemporaryLeft) {
  const fs::path p = dir_ / "m.json";
  write_output_file(p.string(), {"first ", "version"}, "test");
  EXPECT_EQ(read(p), "first version");
  write_output_file(p.string(), {"second"}, "test");
  EXPECT_EQ(read(p), "second");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFile, DevicesAreWrittenInPlaceNeverReplaced) {
  ASSERT_TRUE(is_char_device("/dev/null"));
  write_output_file("/dev/null", {"discarded"}, "--metrics-json");
  EXPECT_TRUE(is_char_device("/dev/null"));
  // A full disk is an error naming the file and the reason; the device stays.
  auto msg = error_of([] { write_output_file("/dev/full", {"x"}, "--metrics-json"); });
  EXPECT_NE(msg.find("--metrics-json: writing '/dev/full' failed: No space left on device"),
            std::string::npos)
      << msg;
  EXPECT_TRUE(is_char_device("/dev/full"));
  // A file a writer made itself (HDF5) is copied into the device.
  const std::string temp = output_temp_path((dir_ / "ckpt.h5").string());
  std::ofstream(temp) << "checkpoint bytes";
  install_output_file(temp, "/dev/null", "--checkpoint");
  EXPECT_TRUE(is_char_device("/dev/null"));
  EXPECT_FALSE(fs::exists(temp));
  std::ofstream(temp) << "checkpoint bytes";
  EXPECT_NE(error_of([&] {
              install_output_file(temp, "/dev/full", "--checkpoint");
            }).find("No space left on device"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(temp));
}

TEST_F(OutputFile, LinksAreFollowedAndKept) {
  const fs::path target = dir_ / "real.csv", link = dir_ / "link.csv";
  std::ofstream(target) << "old";
  fs::create_symlink(target, link);
  write_output_file(link.string(), {"new"}, "test");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read(target), "new");
}

TEST_F(OutputFile, DirectoriesAndMissingFoldersAreRefusedBeforeWork) {
  auto msg = error_of([&] { write_output_file(dir_.string(), {"x"}, "--json"); });
  EXPECT_NE(msg.find("is a directory; expected a file name"), std::string::npos) << msg;
  EXPECT_TRUE(fs::is_directory(dir_));
  msg = error_of(
      [&] { check_output_path((dir_ / "no" / "such" / "m.csv").string(), "--metrics-csv"); });
  EXPECT_NE(msg.find("--metrics-csv: the folder"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  EXPECT_EQ(error_of([&] { check_output_path((dir_ / "new.json").string(), "--json"); }), "");
  EXPECT_EQ(error_of([] { check_output_path("/dev/null", "--json"); }), "");
  EXPECT_NE(error_of([] { check_output_path("", "--json"); }).find("empty file name"),
            std::string::npos);
}

}  // namespace
}  // namespace deep500
