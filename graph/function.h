// FunctionDef: a graph with named arguments and results, passed to an op as an attr of type
// "func" (the `f` of MapDataset, the `predicate` of FilterDataset); the C++ builder writes one
// with BuildFunction (graph/builder/function_builder.h).
//
//   ASSIGN_OR_RETURN(std::unique_ptr<Graph> body, FunctionBodyGraph(fn, &signature));
//
// Each argument is a Placeholder of the body; each result names a tensor of the body. The
// runtime runs a body on the device of the op that holds it (kernels/function_runtime.h).
// Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/graph_spec.h"

namespace tessera {

struct FunctionDef {
  GraphSpec body;
  std::vector<std::string> args;  // Placeholder nodes of `body`, in argument order
  std::vector<std::string> rets;  // tensors of `body` ("n" or "n:1"), in result order
};

// The types and statically known shapes of a function's results.
struct FunctionSignature {
  std::vector<DataType> ret_types;
  std::vector<TensorShape> ret_shapes;
};

// The body as a validated Graph; InvalidArgument when an arg is not a Placeholder of the
// body or a ret names no tensor of it. `signature` may be null.
StatusOr<std::unique_ptr<Graph>> FunctionBodyGraph(const FunctionDef& fn, FunctionSignature* signature,
                                                   const OpRegistry* ops = OpRegistry::Global());

}  // namespace tessera
