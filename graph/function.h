// FunctionDef: a graph with named arguments and results, passed to an op as an attr of type
// "func" (the `f` of MapDataset, the `predicate` of FilterDataset).
//
//   std::vector<DataType> ret_types;
//   StatusOr<FunctionDef> f = BuildFunction(
//       {DataType::kInt64}, {TensorShape()},
//       [](const Scope& s, const std::vector<Output>& args) {
//         return std::vector<Output>{ops::Mul(s, args[0], int64_t{2})};
//       });
//
// Each argument is a Placeholder of the body; each result names a tensor of the body. The
// runtime runs a body on the device of the op that holds it (kernels/function_runtime.h).
// Both functions here are thread-safe; `body` builds in a graph of its own.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/node_def.h"
#include "graph/builder/scope.h"

namespace tessera {

struct FunctionDef {
  GraphDef body;
  std::vector<std::string> args;  // Placeholder nodes of `body`, in argument order
  std::vector<std::string> rets;  // tensors of `body` ("n" or "n:1"), in result order
};

// The types and statically known shapes of a function's results.
struct FunctionSignature {
  std::vector<DataType> ret_types;
  std::vector<TensorShape> ret_shapes;
};

using FunctionBody = std::function<std::vector<Output>(const Scope&, const std::vector<Output>& args)>;

// Builds a body in a fresh graph whose arguments are Placeholders "arg_0", "arg_1", ... of the
// given types and shapes. The first error of any op `body` built is returned.
StatusOr<FunctionDef> BuildFunction(const std::vector<DataType>& arg_types,
                                    const std::vector<TensorShape>& arg_shapes, const FunctionBody& body,
                                    FunctionSignature* signature = nullptr);

// The body as a validated Graph; InvalidArgument when an arg is not a Placeholder of the
// body or a ret names no tensor of it. `signature` may be null.
StatusOr<std::unique_ptr<Graph>> FunctionBodyGraph(const FunctionDef& fn, FunctionSignature* signature);

}  // namespace tessera
