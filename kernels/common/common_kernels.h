// Kernels that never compute on a tensor's bytes, so one implementation serves every device
// type. Each device type registers them for itself, from its own registration call
// (RegisterCpuKernels for the CPU).
#pragma once

#include <functional>
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

// Switch, Merge, Enter, Exit, NextIteration (and their Ref forms), LoopCond and
// ControlTrigger; with `own_memory`, predicates and Merge's value_index in host memory.
void RegisterControlFlowKernels(KernelRegistry& r, const std::string& device_type, bool own_memory);

// VariableV2, for variables of `dtypes` (every type when empty).
void RegisterVariableOp(KernelRegistry& r, const std::string& device_type, const std::vector<DataType>& dtypes = {});

// One strided copy: `rows` rows of `row_bytes`, `src_pitch` bytes apart in the source and
// `dst_pitch` apart in the destination, both in the kernel's device memory.
struct RowCopy {
  void* dst;
  size_t dst_pitch;
  const void* src;
  size_t src_pitch;
  size_t row_bytes;
  int64_t rows;
};
// How a device type does a RowCopy: memcpy on the CPU, a 2-D copy on a GPU's stream.
using CopyRowsFn = std::function<Status(OpKernelContext* ctx, const RowCopy& copy)>;
// ConcatV2, Split and SplitV for tensors of `dtypes` (every type when empty).
void RegisterConcatSplitKernels(KernelRegistry& r, const std::string& device_type, bool own_memory,
                                const std::vector<DataType>& dtypes, CopyRowsFn copy_rows);

// The queue ops, for a device whose memory is the host's: queues keep their tensors there.
void RegisterQueueKernels(KernelRegistry& r, const std::string& device_type);
// StackV2, StackPushV2, StackPopV2 and StackCloseV2, in the step's resources; with
// `own_memory`, handles and max_size in host memory.
void RegisterStackKernels(KernelRegistry& r, const std::string& device_type, bool own_memory);

}  // namespace tessera
