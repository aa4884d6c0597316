#include "devices/gpu/gpu_provider.h"

#include <mutex>

#include "devices/gpu/gpu_device.h"
#include "devices/gpu/gpu_kernels.h"

namespace tessera {

void RegisterGpuProvider() {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)DeviceFactory::Register(kDeviceGpu, kGpuDevicePriority, NewGpuDeviceFactory());
    RegisterGpuKernels(*KernelRegistry::Global());
  });
}

std::string NoGpuDeviceReason() {
  StatusOr<std::vector<PhysicalGpu>> gpus = ListPhysicalGpus();
  if (!gpus.ok()) return std::string(gpus.status().message());
  if (gpus->empty()) return "the CUDA driver sees no GPU";
  return "";
}

}  // namespace tessera
