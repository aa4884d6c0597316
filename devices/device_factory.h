// DeviceFactory: how a device type comes into a process. A provider (the CPU's in devices/cpu,
// the GPU's in devices/gpu) registers one factory per type with its placement priority, and
// its kernels with the kernel registry, in one explicit call; DeviceMgr::CreateLocal asks the
// factories for the devices a config counts, and the placer orders device types by their
// priorities (higher first: GPU 210 before CPU 100, as in TensorFlow).
//
//   void RegisterMyProvider() {                      // the provider's one call
//     (void)DeviceFactory::Register("MYDEV", 300, std::make_unique<MyDeviceFactory>());
//     RegisterMyDeviceKernels(*KernelRegistry::Global());
//   }
//
// The process's registry holds the CPU's factory from its first use: every process has a
// host (devices/cpu/cpu_provider.h defines it, and KernelRegistry::Global(), so this floor
// names no provider). Any other provider is registered by the program's composition point
// (devices/linked/linked_providers.h). Register, Find, Priority and Types may be called
// concurrently from any thread; a factory's CreateDevices may be called concurrently for
// different sessions.
#pragma once

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "devices/device.h"
#include "devices/gpu_options.h"
#include "graph/allocator.h"

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

class DeviceFactoryRegistry;

class DeviceFactory {
 public:
  virtual ~DeviceFactory() = default;
  virtual StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(const DeviceCreationParams& params) = 0;
  // How many devices to create when a config's device_count does not name the type.
  virtual int DefaultCount() const { return 0; }

  // The process's registry; defined by the CPU provider (devices/cpu/cpu_provider.cc).
  static DeviceFactoryRegistry& Registry();
  // Shorthands for Registry()'s methods.
  static Status Register(std::string type, int priority, std::unique_ptr<DeviceFactory> factory);
  static DeviceFactory* Find(std::string_view type);
  static int Priority(std::string_view type);
  static std::vector<std::string> Types();
};

class DeviceFactoryRegistry {
 public:
  // AlreadyExists when the type has a factory.
  Status Register(std::string type, int priority, std::unique_ptr<DeviceFactory> factory);
  // nullptr when the type has none.
  DeviceFactory* Find(std::string_view type) const;
  // The type's placement priority; 0 for a type without a factory.
  int Priority(std::string_view type) const;
  // The registered types, highest priority first.
  std::vector<std::string> Types() const;

 private:
  struct Registered {
    int priority;
    std::unique_ptr<DeviceFactory> factory;
  };
  mutable std::shared_mutex mu_;
  std::map<std::string, Registered, std::less<>> by_type_;  // guarded by mu_
};

// The shorthands are inline, so that this floor never calls Registry(): only the programs
// that link a provider do.
inline Status DeviceFactory::Register(std::string type, int priority, std::unique_ptr<DeviceFactory> factory) {
  return Registry().Register(std::move(type), priority, std::move(factory));
}
inline DeviceFactory* DeviceFactory::Find(std::string_view type) { return Registry().Find(type); }
inline int DeviceFactory::Priority(std::string_view type) { return Registry().Priority(type); }
inline std::vector<std::string> DeviceFactory::Types() { return Registry().Types(); }

}  // namespace tessera
