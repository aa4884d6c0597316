#include "kernels/cpu/register.h"

namespace tessera {

void RegisterCpuKernels(KernelRegistry& r) {
  cpu::RegisterArrayKernels(r);
  cpu::RegisterVariableKernels(r);
  cpu::RegisterCwiseKernels(r);
  cpu::RegisterMatMulKernels(r);
  cpu::RegisterReductionKernels(r);
  cpu::RegisterNnKernels(r);
  cpu::RegisterCastKernels(r);
  cpu::RegisterSendRecvKernels(r);
  cpu::RegisterAllReduceKernels(r);
  cpu::RegisterQueueKernels(r);
  cpu::RegisterDecodeCsvKernels(r);
  cpu::RegisterSourceDatasetKernels(r);
  cpu::RegisterTransformDatasetKernels(r);
  cpu::RegisterPrefetchDatasetKernels(r);
  cpu::RegisterFunctionDatasetKernels(r);
  cpu::RegisterIteratorKernels(r);
  cpu::RegisterShapeKernels(r);
  cpu::RegisterTrainingKernels(r);
  cpu::RegisterRandomKernels(r);
  cpu::RegisterConvKernels(r);
  cpu::RegisterConcatSplitKernels(r);
  cpu::RegisterCheckpointKernels(r);
}

}  // namespace tessera
