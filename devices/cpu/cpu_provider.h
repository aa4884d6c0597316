// The CPU provider: the device type every process has (the host, where feeds and fetches
// live) and every CPU kernel of the core ops, with the device-independent kernels
// (kernels/common) and tf.data's (kernels/data). The process's registries hold it from their
// first use: KernelRegistry::Global() and DeviceFactory::Registry() are defined here, so no
// floor below names a provider, and a program that links the runtime always has a CPU.
// Other providers are registered by the program (devices/linked/linked_providers.h).
//
//   KernelRegistry mine;          // a registry of one's own, as the placer's tests make
//   RegisterCpuKernels(mine);
//
// Both functions are thread-safe.
#pragma once

#include <memory>

#include "devices/device_factory.h"
#include "kernels/kernel_registry.h"

namespace tessera {

// Placement priority of CPU devices, as in TensorFlow.
inline constexpr int kCpuDevicePriority = 100;

// Every CPU kernel of the core ops, into `registry`.
void RegisterCpuKernels(KernelRegistry& registry);

// The CPU's device factory: host-memory devices, each with its own allocation accounting
// over one shared budget; one by default.
std::unique_ptr<DeviceFactory> NewCpuDeviceFactory();

}  // namespace tessera
