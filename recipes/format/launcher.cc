#include "recipes/format/launcher.h"

#include <fstream>
#include <sstream>

#include "deep/error.h"
#include "deep/text.h"
#include "recipes/format/yaml_fields.h"

namespace deep500::recipes {

LauncherOptions read_launcher(Fields& top) {
  LauncherOptions l;
  Fields f = top.section("launcher");
  l.kind = f.text("kind", l.kind);
  if (l.kind != "mpirun" && l.kind != "none")
    f.fail("kind", cat("expected mpirun or none, got '", l.kind, "'"));
  const std::string hostfile = f.text("hostfile", "");
  l.hostfile = f.absolute(hostfile);
  if (!hostfile.empty()) f.resolve("hostfile", YAML::Node(l.hostfile));
  l.map_by = f.text("map_by", "");
  l.bind_to = f.text("bind_to", "");
  l.args = f.texts("args");
  if (l.kind == "none" &&
      (!l.hostfile.empty() || !l.map_by.empty() || !l.bind_to.empty() || !l.args.empty()))
    f.fail("kind", "none starts nothing, so hostfile, map_by, bind_to and args do not apply");
  f.finish();
  return l;
}

std::vector<std::string> launcher_arguments(const LauncherOptions& l) {
  std::vector<std::string> out;
  if (!l.hostfile.empty()) out.insert(out.end(), {"--hostfile", l.hostfile});
  if (!l.map_by.empty()) out.insert(out.end(), {"--map-by", l.map_by});
  if (!l.bind_to.empty()) out.insert(out.end(), {"--bind-to", l.bind_to});
  out.insert(out.end(), l.args.begin(), l.args.end());
  return out;
}

int hostfile_local_slots(const std::string& hostfile, const std::string& hostname) {
  std::ifstream in(hostfile);
  DEEP500_CHECK(in, "launcher.hostfile ", hostfile, ": cannot be read");
  int slots = 0, line_number = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_number;
    std::istringstream fields(line.substr(0, line.find('#')));  // words split by any space
    std::vector<std::string> words;
    for (std::string w; fields >> w;) words.push_back(w);
    if (words.empty()) continue;
    const std::string& host = words[0];
    if (host != "localhost" && host != "127.0.0.1" && host != hostname &&
        host != hostname.substr(0, hostname.find('.')))
      continue;
    for (size_t i = 1; i < words.size(); ++i) {
      if (words[i].rfind("slots=", 0) != 0) continue;
      int64_t n = 0;
      DEEP500_CHECK(parse_int(words[i].substr(6), n) && n >= 0, "launcher.hostfile ", hostfile, ":",
                    line_number, ": expected slots=N with N a count, got '", words[i], "'");
      slots += static_cast<int>(n);
    }
  }
  return slots;
}

std::vector<std::string> launch_warnings(int ranks, int threads, int cores, int hostfile_slots,
                                         const std::string& hostfile) {
  std::vector<std::string> out;
  const int each = threads > 0 ? threads : 1;  // 0: the ranks share the cores
  if (static_cast<int64_t>(ranks) * each > cores)
    out.push_back(cat(ranks, " ranks x ", each, " threads need ", ranks * each,
                      " cores and this machine has ", cores,
                      ": they share cores, so times measure their contention; fix: at most ",
                      std::max(1, cores / each), " ranks x ", each,
                      " threads here, or a machine with more cores"));
  if (hostfile_slots > cores)
    out.push_back(cat("launcher.hostfile ", hostfile, " gives this machine ", hostfile_slots,
                      " slots but it has ", cores, " cores: Open MPI then treats up to ",
                      hostfile_slots,
                      " ranks as not oversubscribed and they busy-poll the shared cores (26x "
                      "slower measured here); fix: slots=",
                      cores,
                      " in the hostfile (with --oversubscribe in launcher.args for more "
                      "ranks than cores)"));
  return out;
}

}  // namespace deep500::recipes
