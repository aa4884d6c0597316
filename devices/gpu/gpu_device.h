// GPU devices, as TensorFlow makes them: one GPU device per visible GPU, or several logical
// GPUs on one (gpu_options.experimental.virtual_devices), named
// /job:localhost/replica:0/task:0/device:GPU:i in the order of gpu_options.visible_device_list
// (after CUDA_VISIBLE_DEVICES, which the driver applies).
//
// What a logical GPU owns lives as long as the process and is shared by every session that
// makes a device on it: its memory (a BFCAllocator over cudaMalloc, sized by the first
// session's gpu_options, as in TensorFlow) and its streams (GpuDeviceContext). Memory and
// streams must be shared together: freed memory is reused safely only by work queued on
// the same compute stream. Pinned host memory (staging copies, tensors received from a GPU,
// CPU outputs headed to one) is one process-wide BFCAllocator over cudaHostAlloc, which the
// first GPU device registers as GpuCompatibleHostAllocator().
//
// Built only with TESSERA_CUDA; RegisterGpuProvider (gpu_provider.h) registers the factory
// with the GPU kernels. A machine without a driver or a GPU gets no GPU device, whatever its
// gpu_options say. All functions here may be called concurrently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "devices/device_factory.h"

namespace tessera {

// Placement priority of GPU devices: before the CPU's 100, as in TensorFlow.
constexpr int kGpuDevicePriority = 210;

struct PhysicalGpu {
  int ordinal = 0;  // CUDA's, after CUDA_VISIBLE_DEVICES
  std::string name;
  std::string pci_bus_id;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  size_t total_memory = 0;
  // "device: 0, name: ..., pci bus id: ..., compute capability: 9.0"
  std::string Description() const;
};

// The GPUs this process sees. FailedPrecondition with CUDA's reason when there is no usable
// driver; an empty list when the driver sees no GPU.
StatusOr<std::vector<PhysicalGpu>> ListPhysicalGpus();

std::unique_ptr<DeviceFactory> NewGpuDeviceFactory();

}  // namespace tessera
