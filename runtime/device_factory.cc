#include "runtime/device_factory.h"

#include <algorithm>
#include <map>
#include <shared_mutex>

#include "kernels/kernel_registry.h"
#if TESSERA_HAVE_CUDA
#include "kernels/gpu/register.h"
#include "runtime/gpu/gpu_device.h"
#endif

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

struct Registered {
  int priority;
  std::unique_ptr<DeviceFactory> factory;
};

struct Registry {
  std::shared_mutex mu;
  std::map<std::string, Registered, std::less<>> by_type;  // guarded by mu
};

Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    r->by_type.emplace(kDeviceCpu, Registered{100, std::make_unique<CpuDeviceFactory>()});
#if TESSERA_HAVE_CUDA
    r->by_type.emplace(kDeviceGpu, Registered{kGpuDevicePriority, NewGpuDeviceFactory()});
    RegisterGpuKernels(*KernelRegistry::Global());
#endif
    return r;
  }();
  return *registry;
}

}  // namespace

Status DeviceFactory::Register(std::string type, int priority, std::unique_ptr<DeviceFactory> factory) {
  Registry& r = GetRegistry();
  std::unique_lock lock(r.mu);
  if (r.by_type.count(type) != 0) return errors::AlreadyExists("Device type ", type, " already has a factory");
  r.by_type.emplace(std::move(type), Registered{priority, std::move(factory)});
  return Status::OK();
}

DeviceFactory* DeviceFactory::Find(std::string_view type) {
  Registry& r = GetRegistry();
  std::shared_lock lock(r.mu);
  auto it = r.by_type.find(type);
  return it == r.by_type.end() ? nullptr : it->second.factory.get();
}

int DeviceFactory::Priority(std::string_view type) {
  Registry& r = GetRegistry();
  std::shared_lock lock(r.mu);
  auto it = r.by_type.find(type);
  return it == r.by_type.end() ? 0 : it->second.priority;
}

std::vector<std::string> DeviceFactory::Types() {
  Registry& r = GetRegistry();
  std::shared_lock lock(r.mu);
  std::vector<std::pair<int, std::string>> types;
  for (const auto& [type, entry] : r.by_type) types.emplace_back(-entry.priority, type);
  std::sort(types.begin(), types.end());
  std::vector<std::string> names;
  for (auto& [priority, type] : types) names.push_back(std::move(type));
  return names;
}

std::string NoGpuReason() {
#if TESSERA_HAVE_CUDA
  StatusOr<std::vector<PhysicalGpu>> gpus = ListPhysicalGpus();
  if (!gpus.ok()) return std::string(gpus.status().message());
  if (gpus->empty()) return "the CUDA driver sees no GPU";
  return "";
#else
  return "this build has no GPU support (configure with TESSERA_CUDA=ON)";
#endif
}

}  // namespace tessera
