// LocalFunctionRuntime: the FunctionRuntime the executor gives kernels. A body runs as a
// graph on one device through its own Executor, every node on the calling thread, so a
// function called from an intra-op worker stays on that worker; its kernels do not split
// their work across threads (tf.data's max_intra_op_parallelism of 1).
#pragma once

#include "kernels/function_runtime.h"

namespace tessera {

// The process-wide instance; stateless, so thread-safe.
const FunctionRuntime* LocalFunctionRuntime();

}  // namespace tessera
