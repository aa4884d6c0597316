// DeviceBase: what a kernel sees of the device it runs on — its name and type, where its
// memory comes from, the intra-op pool for parallel loops, and copies between the device
// and host memory. runtime/ implements it (CPU devices now, GPU devices later), so kernels
// never depend on the runtime.
//
// Every method may be called concurrently by the kernels of one step and of concurrent steps.
#pragma once

#include <memory>
#include <string>

#include "graph/allocator.h"
#include "graph/tensor.h"
#include "kernels/thread_pool.h"

namespace tessera {

class DeviceBase {
 public:
  virtual ~DeviceBase() = default;

  // Full name, e.g. "/job:localhost/replica:0/task:0/device:CPU:1".
  virtual const std::string& name() const = 0;
  // "CPU" or "GPU".
  virtual const std::string& device_type() const = 0;

  // Memory the device computes on.
  virtual std::shared_ptr<Allocator> allocator() const = 0;
  // Host memory (for args pinned to the host, and staging).
  virtual std::shared_ptr<Allocator> host_allocator() const = 0;
  virtual ThreadPool* intra_op_pool() const = 0;

  // Copies between host memory and this device's memory. A CPU device shares the buffer.
  virtual Status CopyFromHost(const Tensor& host, Tensor* device_tensor) = 0;
  virtual Status CopyToHost(const Tensor& device_tensor, Tensor* host) = 0;
  // Returns when all work queued on the device so far has finished.
  virtual Status Sync() = 0;
};

}  // namespace tessera
