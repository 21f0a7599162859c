// A new private folder under the temporary directory (mkdtemp, mode 0700)
// for a command's scratch files (worker logs and results, plots drawn
// together), removed with everything in it when the object goes.
#pragma once

#include <filesystem>
#include <string>

namespace deep500 {

class ScratchDir {
 public:
  // `prefix` names the folder (deep500-PREFIX-XXXXXX); Error saying `what`
  // it was for when it cannot be created.
  ScratchDir(const std::string& prefix, const std::string& what);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // PATH/name.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace deep500
