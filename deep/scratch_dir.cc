#include "deep/scratch_dir.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "deep/error.h"

namespace deep500 {

namespace fs = std::filesystem;

ScratchDir::ScratchDir(const std::string& prefix, const std::string& what) {
  std::string pattern = (fs::temp_directory_path() / ("deep500-" + prefix + "-XXXXXX")).string();
  DEEP500_CHECK(mkdtemp(pattern.data()) != nullptr, "cannot create a folder for ", what, " in ",
                fs::temp_directory_path().string(), ": ", std::strerror(errno));
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace deep500
