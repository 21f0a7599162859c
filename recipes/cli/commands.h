// The deep500 command line: one function per subcommand, each taking typed,
// validated options (the CLI11 parsing lives only in main.cc).
#pragma once

#include <string>
#include <vector>

namespace deep500::cli {

struct OnnxTestOptions {
  std::vector<std::string> dirs;
  std::vector<std::string> backends;
  std::string filter;  // substring of the case name
  double timeout_seconds = 60;
  bool isolate = true;
  bool verbose = false;   // print every case, not only failures
  std::string json_path;  // write all rows as JSON
  long min_pass = -1;     // exit 1 when fewer cases pass
};
int onnx_test(const OnnxTestOptions& o);

}  // namespace deep500::cli
