// DeviceMgr: the devices of a process (or of one task of a cluster), made from the
// DeviceFactory of each type (devices/device_factory.h), and found by name.
//
//   auto mgr = DeviceMgr::CreateLocal({{"CPU", 4}}, intra_op_pool, limit_bytes);   // CPU:0..3
//   Device* d = *mgr->Lookup("/cpu:2");
//
// Each device has its own TrackingAllocator, so memory is accounted per device even when
// several virtual CPU devices share the host's memory; all of them share one limit.
// A DeviceMgr is immutable after creation; its devices are thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "devices/device.h"
#include "devices/gpu_options.h"
#include "placement/device_set.h"

namespace tessera {

class DeviceMgr {
 public:
  // Creates up to `device_count[type]` devices of each type from its DeviceFactory, named
  // /job:localhost/replica:0/task:0/device:<type>:<i>; a type the count does not name gets
  // its factory's DefaultCount (one CPU, every visible GPU). A GPU count in a build without
  // a GPU factory yields no device (a count is a maximum, as in TensorFlow); any other type
  // without a factory is InvalidArgument. `intra_op_pool` is borrowed and must outlive the
  // devices. The devices' host-memory allocators together hold at most
  // `memory_limit_bytes`; `gpu_options` go to the GPU factory.
  static StatusOr<std::unique_ptr<DeviceMgr>> CreateLocal(const std::map<std::string, int>& device_count,
                                                          ThreadPool* intra_op_pool, int64_t memory_limit_bytes,
                                                          const GpuOptions& gpu_options = {});
  // The same for task `task` of job `job` of a cluster: /job:<job>/replica:0/task:<task>/...
  static StatusOr<std::unique_ptr<DeviceMgr>> CreateForTask(std::string_view job, int task,
                                                            const std::map<std::string, int>& device_count,
                                                            ThreadPool* intra_op_pool, int64_t memory_limit_bytes,
                                                            const GpuOptions& gpu_options = {});
  explicit DeviceMgr(std::vector<std::unique_ptr<Device>> devices);

  const std::vector<Device*>& devices() const { return device_ptrs_; }
  // By full name or any spec matching exactly one device ("/cpu:1"). NotFound otherwise.
  StatusOr<Device*> Lookup(std::string_view name) const;
  // The incarnation of the device with this full name; 0 for a name it does not hold.
  uint64_t IncarnationOf(std::string_view name) const;
  DeviceSet AsDeviceSet() const;

 private:
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<Device*> device_ptrs_;
  std::map<std::string, Device*, std::less<>> by_name_;
};

}  // namespace tessera
