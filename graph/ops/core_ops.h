// The core op library: the schemas of every op Tessera runs, one file per family (mirroring
// the kernel files), each with its own Register call, and RegisterCoreOps calling them all.
// OpRegistry::Global() (graph/op_registry.h) is defined here: the process's registry holds
// this library from its first use, and the core below needs no op.
//
// Registration is single-threaded per registry, like OpRegistry::Register's callers.
#pragma once

#include "graph/op_registry.h"

namespace tessera {

// Registers a schema of the core library, aborting when it is malformed: that is a bug in
// Tessera, not a user error.
void RegisterCoreOp(OpRegistry& registry, const OpDefBuilder& builder);

// Registers every op of the core library into `registry`.
void RegisterCoreOps(OpRegistry& registry);

// Type attrs the families share.
inline constexpr const char* kNumeric = "T: {float32, float64, int32, int64}";
inline constexpr const char* kFloating = "T: {float32, float64}";

void RegisterArrayOps(OpRegistry& registry);
void RegisterStateOps(OpRegistry& registry);
void RegisterMathOps(OpRegistry& registry);
void RegisterNnOps(OpRegistry& registry);
void RegisterStringOps(OpRegistry& registry);
void RegisterListOps(OpRegistry& registry);
void RegisterRandomOps(OpRegistry& registry);
void RegisterTrainingOps(OpRegistry& registry);
void RegisterIoOps(OpRegistry& registry);
void RegisterSummaryOps(OpRegistry& registry);
void RegisterDataFlowOps(OpRegistry& registry);
void RegisterSendrecvOps(OpRegistry& registry);
void RegisterCollectiveOps(OpRegistry& registry);
void RegisterControlFlowOps(OpRegistry& registry);
// The tf.data ops (datasets and iterators).
void RegisterDataOps(OpRegistry& registry);
// PyFunc, whose kernel the Python package registers.
void RegisterScriptOps(OpRegistry& registry);

}  // namespace tessera
