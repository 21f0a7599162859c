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
  if (l.kind != "mpirun" && l.kind != "srun" && l.kind != "none")
    f.fail("kind", cat("expected mpirun, srun or none, got '", l.kind, "'"));
  const std::string hostfile = f.text("hostfile", "");
  l.hostfile = f.absolute(hostfile);
  if (!hostfile.empty()) f.resolve("hostfile", YAML::Node(l.hostfile));
  l.map_by = f.text("map_by", "");
  l.bind_to = f.text("bind_to", "");
  l.nodes = f.integer("nodes", 0, 0, 1000000);
  l.tasks_per_node = f.integer("tasks_per_node", 0, 0, 1000000);
  l.partition = f.text("partition", "");
  l.time = f.text("time", "");
  l.args = f.texts("args");
  const bool mpirun_options = !l.hostfile.empty() || !l.map_by.empty() || !l.bind_to.empty();
  const bool srun_options = l.nodes || l.tasks_per_node || !l.partition.empty() || !l.time.empty();
  if (l.kind == "none" && (mpirun_options || srun_options || !l.args.empty()))
    f.fail("kind", "none starts nothing, so no other launcher field applies");
  if (l.kind == "mpirun" && srun_options)
    f.fail("kind", "nodes, tasks_per_node, partition and time are srun's: kind: srun");
  if (l.kind == "srun" && mpirun_options)
    f.fail("kind", "hostfile, map_by and bind_to are mpirun's (srun places the ranks itself)");
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

std::vector<std::string> launch_prefix(int ranks, const LauncherOptions& l, unsigned cores,
                                       bool root) {
  if (l.kind == "srun") {
    DEEP500_CHECK(!l.nodes || !l.tasks_per_node || l.nodes * l.tasks_per_node == ranks,
                  "launcher: nodes ", l.nodes, " x tasks_per_node ", l.tasks_per_node, " is ",
                  l.nodes * l.tasks_per_node, " tasks, and the recipe trains on ", ranks, " ranks");
    std::vector<std::string> out = {"srun", "--ntasks", std::to_string(ranks)};
    if (l.nodes) out.insert(out.end(), {"--nodes", std::to_string(l.nodes)});
    if (l.tasks_per_node)
      out.insert(out.end(), {"--ntasks-per-node", std::to_string(l.tasks_per_node)});
    if (!l.partition.empty()) out.insert(out.end(), {"--partition", l.partition});
    if (!l.time.empty()) out.insert(out.end(), {"--time", l.time});
    out.insert(out.end(), l.args.begin(), l.args.end());
    return out;
  }
  // --stdin none: mpirun runs in a process group of its own, where reading
  // the terminal would stop it.
  std::vector<std::string> out = {"mpirun", "-np", std::to_string(ranks), "--stdin", "none"};
  for (const auto& a : launcher_arguments(l)) out.push_back(a);
  if (static_cast<unsigned>(ranks) > cores) out.push_back("--oversubscribe");
  if (root) out.push_back("--allow-run-as-root");
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
