#include "devices/cpu/cpu_provider.h"

namespace tessera {
namespace {

class CpuDeviceFactory final : public DeviceFactory {
 public:
  int DefaultCount() const override { return 1; }
  StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(const DeviceCreationParams& p) override {
    std::vector<std::unique_ptr<Device>> devices;
    for (int i = 0; i < p.count; ++i) {
      DeviceName name = DeviceName::Full(p.job, p.replica, p.task, kDeviceCpu, i);
      auto allocator = std::make_shared<TrackingAllocator>(name.ToString(), CpuAllocator(), p.host_memory);
      devices.push_back(std::make_unique<Device>(name, allocator, allocator, p.intra_op_pool));
    }
    return devices;
  }
};

}  // namespace

std::unique_ptr<DeviceFactory> NewCpuDeviceFactory() { return std::make_unique<CpuDeviceFactory>(); }

KernelRegistry* KernelRegistry::Global() {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry;
    RegisterCpuKernels(*r);
    return r;
  }();
  return registry;
}

DeviceFactoryRegistry& DeviceFactory::Registry() {
  static DeviceFactoryRegistry* registry = [] {
    auto* r = new DeviceFactoryRegistry;
    (void)r->Register(kDeviceCpu, kCpuDevicePriority, NewCpuDeviceFactory());
    return r;
  }();
  return *registry;
}

}  // namespace tessera
