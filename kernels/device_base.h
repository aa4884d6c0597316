// DeviceBase: what a kernel sees of the device it runs on — its name and type, where its
// memory comes from, the intra-op pool for parallel loops, and, for a device with memory of
// its own, the context that queues its work and copies its tensors (device_context.h).
// runtime/ implements it (CPU devices, and the types registered with DeviceFactory), so
// kernels never depend on the runtime.
//
// Every method may be called concurrently by the kernels of one step and of concurrent steps.
#pragma once

#include <memory>
#include <string>

#include "graph/allocator.h"
#include "graph/tensor.h"
#include "kernels/allocator_attributes.h"
#include "kernels/device_context.h"
#include "kernels/thread_pool.h"

namespace tessera {

class DeviceBase {
 public:
  virtual ~DeviceBase() = default;

  // Full name, e.g. "/job:localhost/replica:0/task:0/device:CPU:1".
  virtual const std::string& name() const = 0;
  // "CPU", "GPU", or another type registered with DeviceFactory.
  virtual const std::string& device_type() const = 0;

  // Memory the device computes on.
  virtual std::shared_ptr<Allocator> allocator() const = 0;
  // Host memory for the arguments a kernel keeps on the host, and for staging copies; on a
  // device with memory of its own, memory it copies from and to directly (pinned).
  virtual std::shared_ptr<Allocator> host_allocator() const = 0;
  // The allocator `attr` asks for.
  std::shared_ptr<Allocator> GetAllocator(AllocatorAttributes attr) const {
    if (attr.gpu_compatible && device_context() == nullptr) {
      if (std::shared_ptr<Allocator> pinned = GpuCompatibleHostAllocator()) return pinned;
    }
    return attr.on_host ? host_allocator() : allocator();
  }
  virtual ThreadPool* intra_op_pool() const = 0;

  // nullptr for a device whose memory is the host's; see device_context.h.
  virtual DeviceContext* device_context() const { return nullptr; }
};

// Whether a tensor on `device` allocated with `attr` is in host memory. A null device is
// the host (a feed, a fetch, a value kept by the runtime).
inline bool IsHostMemory(const DeviceBase* device, AllocatorAttributes attr) {
  return device == nullptr || attr.on_host || device->device_context() == nullptr;
}

}  // namespace tessera
