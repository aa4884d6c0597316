#include "devices/gpu/gpu_kernels.h"

#include "devices/cpu/cpu_kernels.h"
#include "devices/gpu/gpu_op_kernel.h"
#include "kernels/common/common_kernels.h"

namespace tessera {
namespace {

// A strided copy within the GPU, on the compute stream like every kernel's work.
Status CopyRowsOnGpu(OpKernelContext* ctx, const RowCopy& c) {
  const GpuDeviceContext& gpu = *GpuContextOf(ctx->device_context());
  RETURN_IF_ERROR(gpu.Activate());
  return CudaStatus(cudaMemcpy2DAsync(c.dst, c.dst_pitch, c.src, c.src_pitch, c.row_bytes,
                                      static_cast<size_t>(c.rows), cudaMemcpyDeviceToDevice, gpu.compute_stream()),
                    "cudaMemcpy2DAsync");
}

}  // namespace

void RegisterGpuKernels(KernelRegistry& r) {
  // int32 stays in host memory on a GPU, as in TensorFlow: it is shapes and indices.
  RegisterRuntimeKernelsWithOwnMemory(r, kDeviceGpu, {DataType::kInt32});
  RegisterShapeOnlyKernels(r, kDeviceGpu, true);
  RegisterControlFlowKernels(r, kDeviceGpu, true);
  RegisterStackKernels(r, kDeviceGpu, true);
  cpu::RegisterHostInt32CwiseKernels(r, kDeviceGpu);
  RegisterVariableOp(r, kDeviceGpu, {DataType::kFloat, DataType::kDouble});
  RegisterConcatSplitKernels(r, kDeviceGpu, true, {DataType::kFloat, DataType::kDouble, DataType::kInt64},
                             CopyRowsOnGpu);
  gpu::RegisterAllReduceKernels(r);
  gpu::RegisterConstKernels(r);
  gpu::RegisterConvKernels(r);
  gpu::RegisterCwiseKernels(r);
  gpu::RegisterReductionKernels(r);
  gpu::RegisterNnKernels(r);
  gpu::RegisterRandomKernels(r);
  gpu::RegisterMatMulKernels(r);
  gpu::RegisterTrainingKernels(r);
  gpu::RegisterVariableKernels(r);
}

}  // namespace tessera
