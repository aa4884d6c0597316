// Const on a GPU, as TensorFlow has it: the value is copied into GPU memory once, when the
// kernel is made, and every step outputs that tensor. int32 constants stay in host memory,
// as every int32 on a GPU (shapes and axes for the kernels that read them on the host).
#include "devices/gpu/gpu_op_kernel.h"

namespace tessera::gpu {
namespace {

class ConstOp : public OpKernel {
 public:
  explicit ConstOp(OpKernelConstruction* c) : OpKernel(c) {
    Tensor host;
    Status s = c->GetAttr("value", &host);
    if (s.ok() && output_memory_type(0) == MemoryType::kDevice) s = CopyToGpu(c->device(), host, &value_);
    if (!s.ok()) c->SetStatus(s);
    if (output_memory_type(0) == MemoryType::kHost) value_ = host;
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, value_); }
  bool IsExpensive() const override { return false; }

 private:
  // On the compute stream, then waited for: the memory may have been freed by a kernel still
  // queued there, and this runs once, when a session is made.
  static Status CopyToGpu(DeviceBase* device, const Tensor& host, Tensor* out) {
    const GpuDeviceContext* gpu = GpuContextOf(device->device_context());
    RETURN_IF_ERROR(gpu->Activate());
    ASSIGN_OR_RETURN(*out, Tensor::Allocate(device->allocator(), host.dtype(), host.shape()));
    RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(out->raw_data(), host.raw_data(), host.TotalBytes(),
                                               cudaMemcpyHostToDevice, gpu->compute_stream()),
                               "copying a Const to the GPU"));
    return gpu->Synchronize();
  }

  Tensor value_;
};

}  // namespace

void RegisterConstKernels(KernelRegistry& r) {
  r.Register<ConstOp>(KernelDefBuilder("Const").Device(kDeviceGpu).TypeConstraint(
      "dtype", {DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kBool}));
  r.Register<ConstOp>(KernelDefBuilder("Const")
                          .Device(kDeviceGpu)
                          .TypeConstraint("dtype", {DataType::kInt32})
                          .HostMemory("output"));
}

}  // namespace tessera::gpu
