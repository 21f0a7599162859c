#include "recipes/format/machine.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "deep/text.h"
#include "distributed/mpi_communicator.h"
#include "network/settings.h"
#include "recipes/format/constraints.h"

namespace deep500::recipes {

namespace {

std::vector<std::string> nvidia_gpus() {
  std::vector<std::string> out;
  std::error_code ec;
  const std::filesystem::path dir = "/proc/driver/nvidia/gpus";
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (const auto& gpu : std::filesystem::directory_iterator(dir, ec)) {
    std::ifstream info(gpu.path() / "information");
    for (std::string line; std::getline(info, line);)
      if (line.rfind("Model:", 0) == 0) {
        std::string model = line.substr(6);
        model.erase(0, model.find_first_not_of(" \t"));
        out.push_back(model);
      }
  }
  return out;
}

std::string unmet(const std::string& what, const std::string& constraint,
                  const std::string& found) {
  return cat(what, " ", constraint, " required, found ", found);
}

}  // namespace

DetectedMachine detect_machine(bool describe_gpus) {
  DetectedMachine m;
  struct utsname u {};
  m.architecture = uname(&u) == 0 ? u.machine : "unknown";
  const metrics::Context c = network::result_context(nullptr);
  m.cpu_model = c.cpu_model;
  std::istringstream isa(c.isa);
  for (std::string flag; isa >> flag;) m.isa.push_back(flag);
  // A rank's affinity is mpirun's binding (one core per rank by default),
  // not the machine the job has; elsewhere it is the allocation (taskset, a
  // SLURM cpuset).
  m.cores =
      c.affinity_cpus > 0 && !distributed::launched_by_mpirun() ? c.affinity_cpus : c.logical_cpus;
  m.memory_gib =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE) / (1024.0 * 1024 * 1024);
  m.gpus = nvidia_gpus();
  if (describe_gpus) m.gpu_details = metrics::describe_devices(true);
  m.hostname = c.hostname;
  m.software["deep500"] = DEEP500_VERSION;
  for (const auto& [name, version] : c.libraries) m.software[name] = version;
  return m;
}

std::vector<std::string> unmet_constraints(const HardwareManifest& h, const SoftwareManifest& s,
                                           const DetectedMachine& m) {
  std::vector<std::string> out;
  const std::string hw = cat("hardware '", h.header.name, "': ");
  if (!h.architecture.empty() && h.architecture != m.architecture)
    out.push_back(cat(hw, "architecture ", h.architecture, " required, found ", m.architecture));
  for (const auto& flag : h.isa)
    if (std::find(m.isa.begin(), m.isa.end(), flag) == m.isa.end())
      out.push_back(cat(hw, "ISA feature ", flag, " required, found ", join(m.isa, " ")));
  if (!number_satisfies(m.cores, h.cores))
    out.push_back(hw + unmet("cores", h.cores, std::to_string(m.cores)));
  if (!number_satisfies(m.memory_gib, h.memory_gib))
    out.push_back(hw + unmet("memory_gib", h.memory_gib, cat(m.memory_gib)));
  if (!number_satisfies(static_cast<double>(m.gpus.size()), h.gpus))
    out.push_back(hw + unmet("gpus.count", h.gpus, std::to_string(m.gpus.size())));
  if (!h.gpu_model.empty() && std::none_of(m.gpus.begin(), m.gpus.end(), [&](const std::string& g) {
        return g.find(h.gpu_model) != std::string::npos;
      }))
    out.push_back(cat(hw, "gpus.model ", h.gpu_model, " required, found ",
                      m.gpus.empty() ? "no GPU" : join(m.gpus, ", ")));
  if (!h.gpu_memory_gib.empty())
    out.push_back(cat(hw, "gpus.memory_gib ", h.gpu_memory_gib,
                      " required, but GPU memory is not detected on this machine"));
  const std::string sw = cat("software '", s.header.name, "': ");
  for (const auto& [name, constraint] : s.requires_versions) {
    auto have = m.software.find(name);
    if (have == m.software.end())
      out.push_back(cat(
          sw, name, " ", constraint, " required, not built or not found (have: ",
          [&] {
            std::vector<std::string> names;
            for (const auto& kv : m.software) names.push_back(kv.first);
            return join(names, ", ");
          }(),
          ")"));
    else if (!version_satisfies(have->second, constraint))
      out.push_back(cat(sw, name, " ", constraint, " required, found ", have->second));
  }
  return out;
}

std::string machine_manifests_yaml(const DetectedMachine& m) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "hardware" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << m.hostname;
  out << YAML::Key << "version" << YAML::Value << "1.0.0";
  out << YAML::Key << "description" << YAML::Value
      << cat(m.cpu_model, ", detected by deep500 info");
  out << YAML::Key << "architecture" << YAML::Value << m.architecture;
  out << YAML::Key << "isa" << YAML::Value << YAML::Flow << m.isa;
  out << YAML::Key << "cores" << YAML::Value << cat(">=", m.cores);
  out << YAML::Key << "memory_gib" << YAML::Value
      << cat(">=", static_cast<int64_t>(m.memory_gib * 0.9));
  out << YAML::Key << "gpus" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "count" << YAML::Value << cat(">=", m.gpus.size());
  if (!m.gpus.empty()) out << YAML::Key << "model" << YAML::Value << m.gpus[0];
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "software" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << "deep500-" + m.hostname;
  out << YAML::Key << "version" << YAML::Value << "1.0.0";
  out << YAML::Key << "description" << YAML::Value << "detected by deep500 info";
  out << YAML::Key << "requires" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, version] : m.software)
    out << YAML::Key << name << YAML::Value << cat(">=", version);
  out << YAML::EndMap << YAML::EndMap;
  if (!m.gpu_details.empty()) {  // for the record: no manifest field states these
    out << YAML::Key << "devices" << YAML::Value << YAML::BeginSeq;
    for (const auto& d : m.gpu_details) {
      out << YAML::BeginMap;
      for (const auto& [k, v] : d) out << YAML::Key << k << YAML::Value << v;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace deep500::recipes
