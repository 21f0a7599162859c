// This machine's hardware and software, as manifests can require them
// (`deep500 info` prints them as YAML a recipe can use as is), and the
// check of a recipe's constraints against them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "recipes/format/manifests.h"

namespace deep500::recipes {

struct DetectedMachine {
  std::string architecture;       // uname's machine
  std::string cpu_model;          // /proc/cpuinfo
  std::vector<std::string> isa;   // CPU flags (all of them)
  int cores = 0;                  // CPUs this process may use
  double memory_gib = 0;          // physical memory
  std::vector<std::string> gpus;  // NVIDIA GPU models (/proc/driver/nvidia/gpus)
  // Each GPU as its runtime describes it (metrics::describe_devices): only
  // when asked for (starting CUDA takes time and rules out fork()).
  std::vector<std::vector<std::pair<std::string, std::string>>> gpu_details;
  std::string hostname;
  std::map<std::string, std::string> software;  // name -> version (deep500, backends' libraries)
};

// Detects it now; the backends must be registered (their libraries are
// software). `describe_gpus`: also start the device runtime for gpu_details.
DetectedMachine detect_machine(bool describe_gpus = false);

// One line per constraint that does not hold, naming it and what was found
// (empty when all hold).
std::vector<std::string> unmet_constraints(const HardwareManifest& h, const SoftwareManifest& s,
                                           const DetectedMachine& m);

// `deep500 info`: the hardware and software manifests of this machine, and
// (key `devices`) its GPUs as gpu_details describes them.
std::string machine_manifests_yaml(const DetectedMachine& m);

}  // namespace deep500::recipes
