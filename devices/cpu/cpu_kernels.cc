#include "devices/cpu/cpu_kernels.h"

#include <algorithm>
#include <cstring>

#include "devices/cpu/cpu_provider.h"
#include "kernels/common/common_kernels.h"
#include "kernels/data/data_kernels.h"

namespace tessera {
namespace {

// Rows cut into pieces of about kPiece bytes, the pieces across the intra-op threads: one
// core's copy falls short of what two move (DenseNet121's concatenations at batch 32 took
// 112 ms of a 2.5 s step on one thread, and as long on two).
Status CopyRowsOnHost(OpKernelContext* ctx, const RowCopy& c) {
  constexpr int64_t kPiece = 64 << 10;
  char* dst = static_cast<char*>(c.dst);
  const char* src = static_cast<const char*>(c.src);
  const int64_t row_bytes = static_cast<int64_t>(c.row_bytes);
  const int64_t pieces = std::max<int64_t>(1, (row_bytes + kPiece - 1) / kPiece);  // a row's; the last may be short
  const auto copy = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r = i / pieces, from = i % pieces * kPiece;
      std::memcpy(dst + r * c.dst_pitch + from, src + r * c.src_pitch + from, std::min(kPiece, row_bytes - from));
    }
  };
  // About a cycle for every 4 bytes a memcpy moves.
  if (ctx != nullptr) ctx->ParallelFor(c.rows * pieces, std::min(kPiece, row_bytes) / 4 + 1, copy);
  else copy(0, c.rows * pieces);
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
  cpu::RegisterSummaryKernels(r);
  cpu::RegisterListKernels(r);
  cpu::RegisterBatchMatMulKernels(r);
  cpu::RegisterDepthwiseConvKernels(r);
  cpu::RegisterBlockedKernels(r);
}

}  // namespace tessera
