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

// deep500 op check|bench OPTYPE: one operator, validated against the
// reference (check) or measured with the metrics Runner (bench).
struct OpOptions {
  std::string mode;  // "check" or "bench"
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  int opset = 17;
  std::vector<std::string> inputs;      // NAME:dtype:shape, e.g. x:float32:1x3x224x224
  std::vector<std::string> attrs;       // key=value; typed by the ONNX schema
  int outputs = -1;                     // node outputs; -1 = the schema's minimum
  std::vector<std::string> backends;    // empty = reference; "all" = every registered one
  unsigned long long seed = 42;         // of the random inputs
  std::vector<double> range = {-1, 1};  // uniform input range
  // check
  bool grad = false;  // also run the gradient check
  // bench
  std::string shapes_path;        // benchdnn-style problems, one a line
  std::string dtype = "float32";  // element type of --shapes problems
  std::string json_path, csv_path;
  int warmup = 3, min_repetitions = 10, max_repetitions = 10000;
  double min_time_seconds = 0.2, max_time_seconds = 10;
};
int op_command(const OpOptions& o);

}  // namespace deep500::cli
