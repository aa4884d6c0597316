// The composition point of the device providers: the one place that knows which providers
// this build links. The CPU's is in every process from the start (devices/cpu); this adds the
// others: the GPU's (devices/gpu) in a build with CUDA. A CPU-only build and a CUDA build
// differ only in whether the GPU provider's library is linked here.
//
//   int main() {
//     tessera::RegisterLinkedProviders();   // once, early: GPUs where the build has them
//     ...
//   }
//
// The CLI and the C API call it for their users. Both functions are thread-safe.
#pragma once

#include <string>

namespace tessera {

// Registers every provider this build links besides the CPU's; idempotent.
void RegisterLinkedProviders();

// Why this process can have no GPU device, in words: that the build has no GPU provider, the
// CUDA driver's error, or that the driver sees no GPU; empty when a GPU is there.
std::string NoGpuReason();

}  // namespace tessera
