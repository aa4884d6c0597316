#include "devices/linked/linked_providers.h"

// TESSERA_WITH_GPU_PROVIDER comes with the GPU provider's library: linking it is what
// makes a CUDA build.
#if TESSERA_WITH_GPU_PROVIDER
#include "devices/gpu/gpu_provider.h"
#endif

namespace tessera {

void RegisterLinkedProviders() {
#if TESSERA_WITH_GPU_PROVIDER
  RegisterGpuProvider();
#endif
}

std::string NoGpuReason() {
#if TESSERA_WITH_GPU_PROVIDER
  return NoGpuDeviceReason();
#else
  return "this build has no GPU support (configure with TESSERA_CUDA=ON)";
#endif
}

}  // namespace tessera
