// GpuOpKernel: the base of the GPU kernels. It makes the kernel's GPU current on the calling
// thread (inter-op threads serve every device) and hands ComputeOnGpu the device's context,
// whose compute stream the kernel enqueues its work on before returning. The executor
// counts the kernel done when ComputeOnGpu returns: the stream orders what follows. Such a
// kernel is cheap for the executor, as in TensorFlow: a partition's launches run in order on
// one thread, where handing them to others only made threads contend for the stream.
// Internal to devices/gpu/.
#pragma once

#include "devices/gpu/gpu_device_context.h"
#include "devices/gpu/launch.h"
#include "kernels/kernel_registry.h"

namespace tessera::gpu {

class GpuOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) final {
    GpuDeviceContext* gpu = GpuContextOf(ctx->device_context());
    OP_REQUIRES_OK(ctx, gpu->Activate());
    ComputeOnGpu(ctx, *gpu);
  }
  bool IsExpensive() const override { return false; }

 protected:
  virtual void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) = 0;
};

// Element pointers of a tensor in device memory.
template <typename T>
const T* DevicePtr(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}
template <typename T>
T* MutableDevicePtr(Tensor* t) {
  return static_cast<T*>(t->raw_data());
}

// A copy of `t` (device memory) in new device memory, enqueued on the compute stream: what a
// variable update does with a buffer a reader still shares.
StatusOr<Tensor> CopyOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu, const Tensor& t);

// Reduce on the compute stream, with the scratch memory it asks for from the step's
// temporaries (freed when the kernel returns: later work on the stream comes after).
template <typename T>
Status ReduceOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu, ReduceFn fn, const T* in, T* out, int64_t outer,
                   int64_t reduced, int64_t inner) {
  Tensor scratch;
  const size_t bytes = ReduceScratchBytes(outer, reduced, inner);
  if (bytes > 0) {
    RETURN_IF_ERROR(ctx->allocate_temp(DataType::kUInt8, TensorShape({static_cast<int64_t>(bytes)}), &scratch));
  }
  return CudaStatus(Reduce<T>(fn, in, out, outer, reduced, inner, bytes > 0 ? scratch.raw_data() : nullptr,
                              gpu.compute_stream()),
                    ctx->op_kernel().type_string());
}

// Per-file registration, called by RegisterGpuKernels.
void RegisterAllReduceKernels(KernelRegistry& r);
void RegisterConstKernels(KernelRegistry& r);
void RegisterConvKernels(KernelRegistry& r);
void RegisterCwiseKernels(KernelRegistry& r);
void RegisterReductionKernels(KernelRegistry& r);
void RegisterNnKernels(KernelRegistry& r);
void RegisterRandomKernels(KernelRegistry& r);
void RegisterMatMulKernels(KernelRegistry& r);
void RegisterTrainingKernels(KernelRegistry& r);
void RegisterVariableKernels(KernelRegistry& r);

}  // namespace tessera::gpu
