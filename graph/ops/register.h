// The core op library's schemas, one file per family (mirroring the kernel files), each
// with its own Register call; RegisterCoreOps (OpRegistry::Global() runs it) calls them all.
//
// Registration is single-threaded per registry, like OpRegistry::Register's callers.
#pragma once

#include "graph/op_registry.h"

namespace tessera {

// Registers a schema of the core library, aborting when it is malformed: that is a bug in
// Tessera, not a user error.
void RegisterCoreOp(OpRegistry& registry, const OpDefBuilder& builder);

// Type attrs the families share.
inline constexpr const char* kNumeric = "T: {float32, float64, int32, int64}";
inline constexpr const char* kFloating = "T: {float32, float64}";

void RegisterArrayOps(OpRegistry& registry);
void RegisterStateOps(OpRegistry& registry);
void RegisterMathOps(OpRegistry& registry);
void RegisterNnOps(OpRegistry& registry);
void RegisterRandomOps(OpRegistry& registry);
void RegisterTrainingOps(OpRegistry& registry);
void RegisterIoOps(OpRegistry& registry);
void RegisterDataFlowOps(OpRegistry& registry);
void RegisterSendrecvOps(OpRegistry& registry);
void RegisterCollectiveOps(OpRegistry& registry);
void RegisterControlFlowOps(OpRegistry& registry);
// The tf.data ops (datasets and iterators).
void RegisterDataOps(OpRegistry& registry);

}  // namespace tessera
