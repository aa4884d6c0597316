// Kernels that never compute on a tensor's bytes, so one implementation serves every device
// type. Each device type registers them for itself, from its own registration call
// (RegisterCpuKernels for the CPU).
#pragma once

#include <string>
#include <vector>

#include "kernels/kernel_registry.h"

namespace tessera {

// What every device type needs to take part in a step: NoOp, Identity, _Arg, _Retval,
// _Send and _Recv, for a device whose memory is the host's (the CPU).
void RegisterRuntimeKernels(KernelRegistry& r, const std::string& device_type);
// The same for a device with memory of its own, with _HostSend and _HostRecv for the
// arguments its kernels keep in host memory. Tensors of the `host_memory_types` (and
// strings and variants, which are objects, not bytes) stay in host memory: TensorFlow keeps
// int32 on the host on a GPU.
void RegisterRuntimeKernelsWithOwnMemory(KernelRegistry& r, const std::string& device_type,
                                         const std::vector<DataType>& host_memory_types);

// _Send and _Recv on `device_type`, and with `host_variants` _HostSend and _HostRecv.
void RegisterSendRecvKernels(KernelRegistry& r, const std::string& device_type, bool host_variants);

// Reshape, Shape and Size; with `own_memory`, shapes and sizes stay in host memory.
void RegisterShapeOnlyKernels(KernelRegistry& r, const std::string& device_type, bool own_memory);

// VariableV2, for variables of `dtypes` (every type when empty).
void RegisterVariableOp(KernelRegistry& r, const std::string& device_type, const std::vector<DataType>& dtypes = {});

// The queue ops, for a device whose memory is the host's: queues keep their tensors there.
void RegisterQueueKernels(KernelRegistry& r, const std::string& device_type);

}  // namespace tessera
