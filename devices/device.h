// Device: one place ops run, implementing the DeviceBase that kernels see. A Device as it
// is runs on host memory: it is the CPU device, the host every process has; a type with
// memory of its own (devices/gpu/) derives from it and returns its DeviceContext. Device
// types come into a process through DeviceFactory (device_factory.h); DeviceMgr
// (runtime/device_mgr.h) holds a process's devices.
//
//   auto allocator = std::make_shared<TrackingAllocator>(name.ToString(), CpuAllocator(), budget);
//   Device cpu(name, allocator, allocator, intra_op_pool);
//
// Devices are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "graph/device_name.h"
#include "kernels/device_base.h"

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
  // A recorder of one step's work, for whole-step capture (runtime/step_capture.h); Unimplemented
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

}  // namespace tessera
