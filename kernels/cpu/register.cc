#include "kernels/common/register.h"
#include "kernels/cpu/register.h"
#include "kernels/data/register.h"

namespace tessera {

void RegisterCpuKernels(KernelRegistry& r) {
  RegisterRuntimeKernels(r, kDeviceCpu);
  RegisterQueueKernels(r, kDeviceCpu);
  RegisterShapeOnlyKernels(r, kDeviceCpu, false);
  RegisterVariableOp(r, kDeviceCpu);
  RegisterDatasetKernels(r);
  cpu::RegisterArrayKernels(r);
  cpu::RegisterVariableKernels(r);
  cpu::RegisterCwiseKernels(r);
  cpu::RegisterMatMulKernels(r);
  cpu::RegisterReductionKernels(r);
  cpu::RegisterNnKernels(r);
  cpu::RegisterCastKernels(r);
  cpu::RegisterAllReduceKernels(r);
  cpu::RegisterDecodeCsvKernels(r);
  cpu::RegisterShapeKernels(r);
  cpu::RegisterTrainingKernels(r);
  cpu::RegisterRandomKernels(r);
  cpu::RegisterConvKernels(r);
  cpu::RegisterConcatSplitKernels(r);
  cpu::RegisterCheckpointKernels(r);
}

}  // namespace tessera
