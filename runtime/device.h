// Device: one place ops run, implementing the DeviceBase that kernels see; DeviceMgr owns a
// process's devices and finds them by name. A Device as it is runs on host memory (the
// CPU); a type with memory of its own derives from it and returns its DeviceContext.
// Device types come from DeviceFactory (device_factory.h).
//
//   auto mgr = DeviceMgr::CreateLocal({{"CPU", 4}}, intra_op_pool, limit_bytes);   // CPU:0..3
//   Device* d = *mgr->Lookup("/cpu:2");
//
// Each device has its own TrackingAllocator, so memory is accounted per device even when
// several virtual CPU devices share the host's memory; all of them share one limit.
// Devices are thread-safe; a DeviceMgr is immutable after creation.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/device_name.h"
#include "kernels/device_base.h"
#include "placement/device_set.h"
#include "runtime/session_options.h"

namespace tessera {

class StepRecording;

// What a device says about itself beyond its name (TensorFlow's DeviceAttributes).
struct DeviceAttributes {
  // The hardware behind it, as the placement log and `tessera devices` show it: "device: 0,
  // name: NVIDIA H100 80GB HBM3, pci bus id: 0000:00:07.0, compute capability: 9.0" for a GPU.
  std::string physical_device_desc;
  // Bytes its allocator may hold; 0 when it shares the host's memory limit.
  int64_t memory_limit = 0;
};

class Device : public DeviceBase {
 public:
  Device(DeviceName name, std::shared_ptr<Allocator> allocator, std::shared_ptr<Allocator> host_allocator,
         ThreadPool* intra_op_pool, DeviceAttributes attributes = {});

  const std::string& name() const override { return name_; }
  const std::string& device_type() const override { return parsed_.type; }
  const DeviceName& parsed_name() const { return parsed_; }
  std::shared_ptr<Allocator> allocator() const override { return allocator_; }
  std::shared_ptr<Allocator> host_allocator() const override { return host_allocator_; }
  ThreadPool* intra_op_pool() const override { return intra_op_pool_; }
  // Chosen at random when the device is created; part of every rendezvous key it sends.
  uint64_t incarnation() const { return incarnation_; }
  const DeviceAttributes& attributes() const { return attributes_; }
  // A recorder of one step's work, for whole-step capture (step_capture.h); Unimplemented
  // for a device that cannot record (the CPU).
  virtual StatusOr<std::unique_ptr<StepRecording>> NewStepRecording();

 private:
  const DeviceName parsed_;
  const std::string name_;
  const std::shared_ptr<Allocator> allocator_;
  const std::shared_ptr<Allocator> host_allocator_;
  ThreadPool* const intra_op_pool_;
  const uint64_t incarnation_;
  const DeviceAttributes attributes_;
};

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
