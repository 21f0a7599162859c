// NVML (the NVIDIA driver's management library, libnvidia-ml.so.1) for the
// SM clock of a device, loaded with dlopen on first use: it ships with the
// driver, not with the toolkit, so deep500 neither links it nor needs its
// header. Every call answers 0 / "" when NVML is missing or fails.
#pragma once

#include <string>

namespace deep500::cudnn {

struct NvmlClocks {
  unsigned sm_mhz = 0;      // now
  unsigned max_sm_mhz = 0;  // the most the SM clock can run at
  unsigned memory_mhz = 0;  // the memory clock now
};

// The clocks of the device with this PCI bus id (cudaDeviceGetPCIBusId).
NvmlClocks nvml_clocks(const std::string& pci_bus_id);
// The driver's version ("580.65.06"), or "".
std::string nvml_driver_version();

}  // namespace deep500::cudnn
