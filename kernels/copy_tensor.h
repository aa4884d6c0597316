// CopyTensor: moves a tensor between the memories of two devices, or between a device and
// the host, the one way the runtime does it (the rendezvous for _Send/_Recv, _Arg and
// _Retval). Host memory to host memory shares the buffer; anything else allocates the
// destination and copies asynchronously through the devices' DeviceContexts.
//
// Thread-safe; `done` is called exactly once, possibly before CopyTensor returns.
#pragma once

#include <functional>

#include "kernels/device_base.h"

namespace tessera {

using CopyDoneCallback = std::function<void(const Status& status, Tensor output)>;

// `src_device`/`dst_device` nullptr mean the host.
void CopyTensor(const Tensor& input, DeviceBase* src_device, AllocatorAttributes src_attr, DeviceBase* dst_device,
                AllocatorAttributes dst_attr, CopyDoneCallback done);

}  // namespace tessera
