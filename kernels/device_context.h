// DeviceContext: what a device with memory of its own gives kernels beyond an allocator:
// its queue of work (a CUDA stream for a GPU) and copies between its memory and the host's
// or another device's. A device whose memory is the host's (the CPU) has none: its
// DeviceBase::device_context() is nullptr, and nothing is ever copied for it.
//
// Copies are asynchronous: each returns at once and calls `done` exactly once, from any
// thread, when the bytes are in place (or with the error). The caller allocates the
// destination, of the source's dtype and shape, and keeps both tensors alive until `done`.
// Only types of fixed size are copied; strings and variants stay in host memory.
//
// Every method may be called concurrently.
#pragma once

#include <functional>

#include "graph/tensor.h"

namespace tessera {

class DeviceBase;

using StatusCallback = std::function<void(const Status&)>;

class DeviceContext {
 public:
  virtual ~DeviceContext() = default;

  // The device's queue of work, opaque here (a cudaStream_t for a GPU); nullptr when the
  // device has none.
  virtual void* stream() const { return nullptr; }

  // `host` (host memory) into `device_tensor`, in the memory of `device`.
  virtual void CopyHostToDevice(const Tensor& host, DeviceBase* device, Tensor* device_tensor,
                                StatusCallback done) const = 0;
  // `device_tensor`, in the memory of `device`, into `host` (host memory).
  virtual void CopyDeviceToHost(const Tensor& device_tensor, DeviceBase* device, Tensor* host,
                                StatusCallback done) const = 0;
  // `src`, in the memory of `src_device` (this context's device), into `dst`, in the memory
  // of `dst_device`. By default through a buffer in host memory, with the two devices'
  // own copies; a device with a direct path (GPU peer copies) overrides it.
  virtual void CopyDeviceToDevice(const Tensor& src, DeviceBase* src_device, DeviceBase* dst_device, Tensor* dst,
                                  StatusCallback done) const;
};

}  // namespace tessera
