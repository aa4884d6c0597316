// The GPU kernels' registration: RegisterGpuProvider (gpu_provider.h) calls it with the GPU's
// device factory.
#pragma once

#include "kernels/kernel_registry.h"

namespace tessera {

void RegisterGpuKernels(KernelRegistry& r);

}  // namespace tessera
