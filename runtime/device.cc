#include "runtime/device.h"

#include <mutex>
#include <random>

namespace tessera {
namespace {

// Random and never 0, so a device re-created in a restarted process never matches
// rendezvous keys meant for its earlier self.
uint64_t NewIncarnation() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  uint64_t v = 0;
  while (v == 0) v = rng();
  return v;
}

}  // namespace

Device::Device(DeviceName name, std::shared_ptr<Allocator> allocator, ThreadPool* intra_op_pool)
    : parsed_(std::move(name)),
      name_(parsed_.ToString()),
      allocator_(std::move(allocator)),
      intra_op_pool_(intra_op_pool),
      incarnation_(NewIncarnation()) {}

Status CpuDevice::CopyFromHost(const Tensor& host, Tensor* device_tensor) {
  *device_tensor = host;
  return Status::OK();
}

Status CpuDevice::CopyToHost(const Tensor& device_tensor, Tensor* host) {
  *host = device_tensor;
  return Status::OK();
}

StatusOr<std::unique_ptr<DeviceMgr>> DeviceMgr::CreateLocal(const std::map<std::string, int>& device_count,
                                                            ThreadPool* intra_op_pool, int64_t memory_limit_bytes) {
  int cpus = 1;
  for (const auto& [type, count] : device_count) {
    if (count < 0) {
      return errors::InvalidArgument("device_count for ", type, " must be >= 0, got ", count);
    }
    if (type == "CPU") {
      cpus = count;
    } else if (type != "GPU") {
      return errors::InvalidArgument("Unknown device type '", type, "' in device_count; use CPU or GPU");
    }
  }
  if (cpus == 0) return errors::InvalidArgument("device_count CPU must be at least 1");
  std::vector<std::unique_ptr<Device>> devices;
  auto budget = std::make_shared<MemoryBudget>(memory_limit_bytes);
  for (int i = 0; i < cpus; ++i) {
    DeviceName name = DeviceName::Full("localhost", 0, 0, "CPU", i);
    auto allocator = std::make_shared<TrackingAllocator>(name.ToString(), CpuAllocator(), budget);
    devices.push_back(std::make_unique<CpuDevice>(name, std::move(allocator), intra_op_pool));
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
    Status s = set.Add(d->name());
    (void)s;  // names built by CreateLocal are always full
  }
  return set;
}

uint64_t DeviceMgr::IncarnationOf(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? 0 : it->second->incarnation();
}

}  // namespace tessera
