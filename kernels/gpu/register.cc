#include "kernels/gpu/register.h"

#include "kernels/common/register.h"
#include "kernels/gpu/gpu_op_kernel.h"

namespace tessera {

void RegisterGpuKernels(KernelRegistry& r) {
  // int32 stays in host memory on a GPU, as in TensorFlow: it is shapes and indices.
  RegisterRuntimeKernelsWithOwnMemory(r, kDeviceGpu, {DataType::kInt32});
  RegisterShapeOnlyKernels(r, kDeviceGpu, true);
  RegisterVariableOp(r, kDeviceGpu, {DataType::kFloat, DataType::kDouble});
  gpu::RegisterConstKernels(r);
  gpu::RegisterCwiseKernels(r);
  gpu::RegisterReductionKernels(r);
  gpu::RegisterNnKernels(r);
  gpu::RegisterMatMulKernels(r);
  gpu::RegisterTrainingKernels(r);
  gpu::RegisterVariableKernels(r);
}

}  // namespace tessera
