#include "frameworks/cudnn/nvml.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

namespace deep500::cudnn {
namespace {

// NVML's C ABI, as its documentation declares it (nvml.h is not part of the
// toolkit here): every call returns 0 (NVML_SUCCESS) or an error code.
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr int kClockSm = 1;   // NVML_CLOCK_SM
constexpr int kClockMem = 2;  // NVML_CLOCK_MEM

struct Nvml {
  int (*init)() = nullptr;
  int (*by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  int (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  int (*max_clock)(NvmlDevice, int, unsigned*) = nullptr;
  int (*driver_version)(char*, unsigned) = nullptr;
  bool ready = false;
};

template <class F>
void resolve(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
}

const Nvml& nvml() {
  static Nvml api;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    resolve(lib, "nvmlInit_v2", api.init);
    resolve(lib, "nvmlDeviceGetHandleByPciBusId_v2", api.by_pci_bus_id);
    resolve(lib, "nvmlDeviceGetClockInfo", api.clock);
    resolve(lib, "nvmlDeviceGetMaxClockInfo", api.max_clock);
    resolve(lib, "nvmlSystemGetDriverVersion", api.driver_version);
    api.ready = api.init && api.by_pci_bus_id && api.clock && api.max_clock && api.driver_version &&
                api.init() == 0;
  });
  return api;
}

// The device's handle, looked up once per bus id (clocks are read after
// every timed sample).
NvmlDevice device_handle(const Nvml& api, const std::string& pci_bus_id) {
  static std::mutex mutex;
  static std::map<std::string, NvmlDevice> handles;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(pci_bus_id);
  if (it != handles.end()) return it->second;
  NvmlDevice d = nullptr;
  if (api.by_pci_bus_id(pci_bus_id.c_str(), &d) != 0) d = nullptr;
  return handles[pci_bus_id] = d;
}

}  // namespace

NvmlClocks nvml_clocks(const std::string& pci_bus_id) {
  NvmlClocks c;
  const Nvml& api = nvml();
  if (!api.ready) return c;
  NvmlDevice d = device_handle(api, pci_bus_id);
  if (!d) return c;
  if (api.clock(d, kClockSm, &c.sm_mhz) != 0) c.sm_mhz = 0;
  if (api.max_clock(d, kClockSm, &c.max_sm_mhz) != 0) c.max_sm_mhz = 0;
  if (api.clock(d, kClockMem, &c.memory_mhz) != 0) c.memory_mhz = 0;
  return c;
}

std::string nvml_driver_version() {
  const Nvml& api = nvml();
  char buf[96] = {};
  if (!api.ready || api.driver_version(buf, sizeof buf) != 0) return "";
  return buf;
}

}  // namespace deep500::cudnn
