// The GPU kernels' registration: called with the GPU's DeviceFactory (runtime/gpu) in a build
// with TESSERA_CUDA.
#pragma once

#include "kernels/kernel_registry.h"

namespace tessera {

void RegisterGpuKernels(KernelRegistry& r);

}  // namespace tessera
