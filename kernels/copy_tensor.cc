#include "kernels/copy_tensor.h"

#include <memory>

namespace tessera {

void CopyTensor(const Tensor& input, DeviceBase* src_device, AllocatorAttributes src_attr, DeviceBase* dst_device,
                AllocatorAttributes dst_attr, CopyDoneCallback done) {
  const bool src_host = IsHostMemory(src_device, src_attr);
  const bool dst_host = IsHostMemory(dst_device, dst_attr);
  if ((src_host && dst_host) || (!src_host && !dst_host && src_device == dst_device)) {
    done(Status::OK(), input);
    return;
  }
  const std::string& where = src_host ? dst_device->name() : src_device->name();
  if (DataTypeSize(input.dtype()) == 0) {
    done(errors::InvalidArgument("A ", DataTypeName(input.dtype()), " tensor cannot move to or from the memory of ",
                                 where, ": strings and variants stay in host memory"),
         Tensor());
    return;
  }
  // A tensor coming to host memory goes to memory its source device copies into directly
  // (pinned, from a GPU): no staging copy on the way, and none when it goes back.
  std::shared_ptr<Allocator> allocator = dst_host && !src_host ? src_device->GetAllocator({.on_host = true})
                                         : dst_device == nullptr ? CpuAllocator()
                                                                 : dst_device->GetAllocator(dst_attr);
  StatusOr<Tensor> allocated = Tensor::Allocate(allocator, input.dtype(), input.shape());
  if (!allocated.ok()) {
    done(allocated.status(), Tensor());
    return;
  }
  auto output = std::make_shared<Tensor>(std::move(*allocated));
  // The source stays alive until the copy is done, whoever else lets go of it.
  auto finish = [input, output, done = std::move(done)](const Status& s) { done(s, s.ok() ? *output : Tensor()); };
  if (src_host) {
    dst_device->device_context()->CopyHostToDevice(input, dst_device, output.get(), std::move(finish));
  } else if (dst_host) {
    src_device->device_context()->CopyDeviceToHost(input, src_device, output.get(), std::move(finish));
  } else {
    src_device->device_context()->CopyDeviceToDevice(input, src_device, dst_device, output.get(), std::move(finish));
  }
}

}  // namespace tessera
