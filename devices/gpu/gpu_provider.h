// The GPU provider: everything CUDA in Tessera, in this folder and one library
// (tessera_gpu_provider): the GPU device and its memory (gpu_device.h), its streams and copies
// (gpu_device_context.h), its kernels (gpu_kernels.h), and the cuBLAS, cuDNN and NCCL loaders.
// A program registers it with one call at its composition point, as ONNX Runtime's execution
// providers are (devices/linked/linked_providers.h does it for every provider a build links);
// no runtime, placement or cluster code names it.
//
//   RegisterGpuProvider();     // GPU devices and kernels from here on, where a GPU is visible
//
// Both functions are thread-safe.
#pragma once

#include <string>

namespace tessera {

// Registers the GPU's device factory (placement priority 210, before the CPU's 100) and its
// kernels with the process's registries; the first call does, later calls nothing.
void RegisterGpuProvider();

// Why this process can have no GPU device, in the driver's words ("the CUDA driver sees no
// GPU", a missing driver's error); empty when a GPU is there.
std::string NoGpuDeviceReason();

}  // namespace tessera
