// Per-file registration functions of the tf.data kernels; RegisterDatasetKernels calls
// them all. Datasets run on the host: their kernels are registered for the CPU.
#pragma once

#include "kernels/kernel_registry.h"

namespace tessera {

void RegisterDatasetKernels(KernelRegistry& r);

namespace data {

void RegisterSourceDatasetKernels(KernelRegistry& r);
void RegisterTransformDatasetKernels(KernelRegistry& r);
void RegisterPrefetchDatasetKernels(KernelRegistry& r);
void RegisterFunctionDatasetKernels(KernelRegistry& r);
void RegisterIteratorKernels(KernelRegistry& r);

}  // namespace data
}  // namespace tessera
