// A harness of tests/fuzz without libFuzzer: runs LLVMFuzzerTestOneInput once
// on each file named (folders: every file below them, in sorted order), as
// the regular gcc build's ctest fuzz_replay does with the seed corpora and
// tests/fuzz/regressions. A finding is a crash or a sanitizer report, as
// under libFuzzer; new inputs are found by the coverage-guided runs
// (tests/fuzz/run_fuzzers.sh on an address build).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::filesystem::path> inputs_under(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(root)) return {root};
  for (const auto& e : std::filesystem::recursive_directory_iterator(root))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE|FOLDER...\n", argv[0]);
    return 2;
  }
  size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    for (const auto& path : inputs_under(argv[i])) {
      std::ifstream in(path, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "%s: cannot read %s\n", argv[0], path.c_str());
        return 1;
      }
      const std::string bytes{std::istreambuf_iterator<char>(in), {}};
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++runs;
    }
  }
  std::printf("%s: %zu inputs replayed, no finding\n", argv[0], runs);
  return runs > 0 ? 0 : 1;
}
