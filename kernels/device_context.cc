#include "kernels/device_context.h"

#include <memory>

#include "kernels/device_base.h"

namespace tessera {

void DeviceContext::CopyDeviceToDevice(const Tensor& src, DeviceBase* src_device, DeviceBase* dst_device, Tensor* dst,
                                       StatusCallback done) const {
  StatusOr<Tensor> staging = Tensor::Allocate(src_device->host_allocator(), src.dtype(), src.shape());
  if (!staging.ok()) {
    done(staging.status());
    return;
  }
  auto host = std::make_shared<Tensor>(std::move(*staging));
  CopyDeviceToHost(src, src_device, host.get(), [host, dst_device, dst, done = std::move(done)](const Status& s) {
    if (!s.ok()) {
      done(s);
      return;
    }
    dst_device->device_context()->CopyHostToDevice(*host, dst_device, dst,
                                                   [host, done](const Status& copied) { done(copied); });
  });
}

}  // namespace tessera
