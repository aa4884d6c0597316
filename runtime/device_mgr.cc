#include "runtime/device_mgr.h"

#include <mutex>

#include "devices/device_factory.h"
#include "graph/platform/logging.h"
#include "kernels/kernel_registry.h"

namespace tessera {

StatusOr<std::unique_ptr<DeviceMgr>> DeviceMgr::CreateLocal(const std::map<std::string, int>& device_count,
                                                            ThreadPool* intra_op_pool, int64_t memory_limit_bytes,
                                                            const GpuOptions& gpu_options) {
  return CreateForTask("localhost", 0, device_count, intra_op_pool, memory_limit_bytes, gpu_options);
}

StatusOr<std::unique_ptr<DeviceMgr>> DeviceMgr::CreateForTask(std::string_view job, int task,
                                                              const std::map<std::string, int>& device_count,
                                                              ThreadPool* intra_op_pool, int64_t memory_limit_bytes,
                                                              const GpuOptions& gpu_options) {
  std::map<std::string, int, std::less<>> counts;
  for (const std::string& type : DeviceFactory::Types()) counts[type] = DeviceFactory::Find(type)->DefaultCount();
  for (const auto& [type, count] : device_count) {
    if (count < 0) {
      return errors::InvalidArgument("device_count for ", type, " must be >= 0, got ", count);
    }
    if (DeviceFactory::Find(type) == nullptr) {
      // As in TensorFlow, a build without GPUs takes a GPU count and has none; but a GPU-enabled
      // build whose program never registered the GPU provider would be CPU-only silently.
      if (type == kDeviceGpu) {
        static std::once_flag said;
        if (count > 0) {
          std::call_once(said, [] {
            Log(LogSeverity::kInfo, "device_count asks for GPUs, but no GPU provider is registered in this process "
                                    "(a CPU-only build, or a program that did not call RegisterLinkedProviders())");
          });
        }
        continue;
      }
      std::string known;
      for (const std::string& t : DeviceFactory::Types()) known += (known.empty() ? "" : ", ") + t;
      return errors::InvalidArgument("Unknown device type '", type, "' in device_count; this build has ", known);
    }
    counts[type] = count;
  }
  if (counts[kDeviceCpu] == 0) return errors::InvalidArgument("device_count CPU must be at least 1");
  DeviceCreationParams params;
  params.job = std::string(job);
  params.task = task;
  params.intra_op_pool = intra_op_pool;
  params.host_memory = std::make_shared<MemoryBudget>(memory_limit_bytes);
  params.gpu_options = gpu_options;
  std::vector<std::unique_ptr<Device>> devices;
  for (const std::string& type : DeviceFactory::Types()) {
    auto it = counts.find(type);
    if (it == counts.end() || it->second == 0) continue;
    params.count = it->second;
    ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Device>> created, DeviceFactory::Find(type)->CreateDevices(params));
    for (auto& d : created) devices.push_back(std::move(d));
  }
  return std::make_unique<DeviceMgr>(std::move(devices));
}

DeviceMgr::DeviceMgr(std::vector<std::unique_ptr<Device>> devices) : devices_(std::move(devices)) {
  for (const auto& d : devices_) {
    device_ptrs_.push_back(d.get());
    by_name_.emplace(d->name(), d.get());
  }
}

StatusOr<Device*> DeviceMgr::Lookup(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  ASSIGN_OR_RETURN(DeviceName spec, DeviceName::Parse(name));
  Device* found = nullptr;
  for (Device* d : device_ptrs_) {
    if (spec.Matches(d->parsed_name())) {
      if (found != nullptr) return errors::NotFound("Device spec '", name, "' matches several devices");
      found = d;
    }
  }
  if (found == nullptr) return errors::NotFound("No device matches '", name, "'");
  return found;
}

DeviceSet DeviceMgr::AsDeviceSet() const {
  DeviceSet set;
  for (Device* d : device_ptrs_) {
    Status s = set.Add(d->name(), DeviceFactory::Priority(d->device_type()), d->attributes().physical_device_desc);
    (void)s;  // a device's name is always full
  }
  return set;
}

uint64_t DeviceMgr::IncarnationOf(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? 0 : it->second->incarnation();
}

}  // namespace tessera
