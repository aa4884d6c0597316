#include "devices/cpu/cpu_kernels.h"

#include <cstring>

#include "devices/cpu/cpu_provider.h"
#include "kernels/common/common_kernels.h"
#include "kernels/data/data_kernels.h"

namespace tessera {
namespace {

Status CopyRowsOnHost(OpKernelContext*, const RowCopy& c) {
  char* dst = static_cast<char*>(c.dst);
  const char* src = static_cast<const char*>(c.src);
  for (int64_t r = 0; r < c.rows; ++r) std::memcpy(dst + r * c.dst_pitch, src + r * c.src_pitch, c.row_bytes);
  return Status::OK();
}

}  // namespace

void RegisterCpuKernels(KernelRegistry& r) {
  RegisterRuntimeKernels(r, kDeviceCpu);
  RegisterQueueKernels(r, kDeviceCpu);
  RegisterStackKernels(r, kDeviceCpu, false);
  RegisterShapeOnlyKernels(r, kDeviceCpu, false);
  RegisterControlFlowKernels(r, kDeviceCpu, false);
  RegisterVariableOp(r, kDeviceCpu);
  RegisterDatasetKernels(r);
  cpu::RegisterAccumulatorKernels(r);
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
  cpu::RegisterSliceKernels(r);
  cpu::RegisterSelectKernels(r);
  cpu::RegisterGatherKernels(r);
  cpu::RegisterTrainingKernels(r);
  cpu::RegisterRandomKernels(r);
  cpu::RegisterConvKernels(r);
  RegisterConcatSplitKernels(r, kDeviceCpu, false, {}, CopyRowsOnHost);
  cpu::RegisterBundleKernels(r);
  cpu::RegisterCheckpointKernels(r);
  cpu::RegisterStringKernels(r);
  cpu::RegisterListKernels(r);
  cpu::RegisterBatchMatMulKernels(r);
  cpu::RegisterDepthwiseConvKernels(r);
  cpu::RegisterBlockedKernels(r);
}

}  // namespace tessera
