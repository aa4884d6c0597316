// AllocatorAttributes and MemoryType: which memory of a device a tensor lives in. A device
// with memory of its own (a GPU) keeps some arguments in host memory: shapes, axes and
// other small integers its kernels read on the host. The kernel registry says which
// (KernelDefBuilder::HostMemory); every output allocation asks for the memory its kernel
// declared. On a device whose memory is the host's (the CPU) both are the same memory.
#pragma once

namespace tessera {

enum class MemoryType { kDevice, kHost };

struct AllocatorAttributes {
  // Host memory, even on a device with memory of its own. Such a device's host allocator
  // hands out memory it can copy from and to directly (pinned, for a GPU), so host memory
  // needs no second kind.
  bool on_host = false;
  // Host memory a GPU copies from directly (pinned), for a tensor a CPU kernel makes for a
  // GPU: the copy then needs no staging. Plain host memory in a process without GPUs.
  bool gpu_compatible = false;

  static AllocatorAttributes For(MemoryType type) { return {.on_host = type == MemoryType::kHost}; }
};

}  // namespace tessera
