// DeviceFactory: how a device type comes into a process. Each type registers one factory
// with its placement priority; DeviceMgr::CreateLocal asks the factories for the devices a
// config counts, and the placer orders device types by their priorities (higher first:
// GPU 210 before CPU 100, as in TensorFlow).
//
//   void RegisterMyDevice() {                      // the device module's own call
//     DeviceFactory::Register("MYDEV", 300, std::make_unique<MyDeviceFactory>());
//     RegisterMyDeviceKernels(*KernelRegistry::Global());
//   }
//
// The CPU's factory, and in a CUDA build the GPU's (runtime/gpu/gpu_device.h) with its
// kernels, are registered on first use of the registry. Register, Find and
// Priority may be called concurrently from any thread; a factory's CreateDevices may be
// called concurrently for different sessions.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graph/allocator.h"
#include "runtime/device.h"

namespace tessera {

struct DeviceCreationParams {
  std::string job = "localhost";
  int replica = 0;
  int task = 0;
  // How many devices of the type the config asks for; a factory may create fewer (a
  // machine with fewer GPUs), as device_count is a maximum in TensorFlow.
  int count = 0;
  // Borrowed; outlives the devices.
  ThreadPool* intra_op_pool = nullptr;
  // What the devices' host-memory allocations share (the session's host_memory_limit_mb).
  std::shared_ptr<MemoryBudget> host_memory;
  GpuOptions gpu_options;
};

class DeviceFactory {
 public:
  virtual ~DeviceFactory() = default;
  virtual StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(const DeviceCreationParams& params) = 0;
  // How many devices to create when a config's device_count does not name the type.
  virtual int DefaultCount() const { return 0; }

  // AlreadyExists when the type has a factory.
  static Status Register(std::string type, int priority, std::unique_ptr<DeviceFactory> factory);
  // nullptr when the type has none.
  static DeviceFactory* Find(std::string_view type);
  // The type's placement priority; 0 for a type without a factory.
  static int Priority(std::string_view type);
  // The registered types, highest priority first.
  static std::vector<std::string> Types();
};

// Why this process can have no GPU device, in words ("this build has no GPU support ...",
// the CUDA driver's error, "the CUDA driver sees no GPU"); empty when a GPU is there.
std::string NoGpuReason();

}  // namespace tessera
