// Linked into every GPU test binary: the GPU provider is registered before main, as a
// program's composition point registers it (devices/linked/linked_providers.h). A test
// binary's own object file is always linked, so this cannot be lost.
#include "devices/gpu/gpu_provider.h"

namespace {

const bool registered = (tessera::RegisterGpuProvider(), true);

}  // namespace
