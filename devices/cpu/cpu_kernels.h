// Per-file registration functions of the CPU kernels; RegisterCpuKernels calls them all,
// with the device-independent kernels (kernels/common/) and the tf.data kernels.
// Internal to kernels/.
#pragma once

#include <string>

#include "kernels/kernel_registry.h"

namespace tessera::cpu {

void RegisterAccumulatorKernels(KernelRegistry& r);
void RegisterArrayKernels(KernelRegistry& r);
void RegisterVariableKernels(KernelRegistry& r);
void RegisterCwiseKernels(KernelRegistry& r);
void RegisterMatMulKernels(KernelRegistry& r);
void RegisterReductionKernels(KernelRegistry& r);
void RegisterNnKernels(KernelRegistry& r);
void RegisterCastKernels(KernelRegistry& r);
void RegisterAllReduceKernels(KernelRegistry& r);
void RegisterDecodeCsvKernels(KernelRegistry& r);
void RegisterShapeKernels(KernelRegistry& r);
void RegisterSliceKernels(KernelRegistry& r);
void RegisterSelectKernels(KernelRegistry& r);
void RegisterGatherKernels(KernelRegistry& r);
void RegisterTrainingKernels(KernelRegistry& r);
void RegisterRandomKernels(KernelRegistry& r);
void RegisterConvKernels(KernelRegistry& r);
void RegisterBundleKernels(KernelRegistry& r);
void RegisterCheckpointKernels(KernelRegistry& r);
void RegisterStringKernels(KernelRegistry& r);
void RegisterSummaryKernels(KernelRegistry& r);
void RegisterListKernels(KernelRegistry& r);
void RegisterBatchMatMulKernels(KernelRegistry& r);
void RegisterDepthwiseConvKernels(KernelRegistry& r);
void RegisterBlockedKernels(KernelRegistry& r);

// The int32 arithmetic of shapes (Add, Sub, Mul, Div, Maximum, Minimum, Neg, Square) for a
// device with memory of its own: the CPU's kernels with every argument in host memory, as
// TensorFlow registers int32 on a GPU.
void RegisterHostInt32CwiseKernels(KernelRegistry& r, const std::string& device_type);

// Calls fn(T{}) for each type in Ts: registration loops over a kernel's types.
template <typename... Ts, typename Fn>
void ForEachType(Fn&& fn) {
  (fn(Ts{}), ...);
}

}  // namespace tessera::cpu
