// BuildFunction: a FunctionDef (graph/function.h) written with the C++ builder, for the
// function attrs of ops such as MapDataset's `f` and FilterDataset's `predicate`.
//
//   std::vector<DataType> ret_types;
//   StatusOr<FunctionDef> f = BuildFunction(
//       {DataType::kInt64}, {TensorShape()},
//       [](const Scope& s, const std::vector<Output>& args) {
//         return std::vector<Output>{ops::Mul(s, args[0], int64_t{2})};
//       });
//
// Each argument is a Placeholder of the body; each result names a tensor of the body.
// Thread-safe: `body` builds in a graph of its own.
#pragma once

#include <functional>
#include <vector>

#include "graph/builder/scope.h"
#include "graph/function.h"

namespace tessera {

using FunctionBody = std::function<std::vector<Output>(const Scope&, const std::vector<Output>& args)>;

// Builds a body in a fresh graph whose arguments are Placeholders "arg_0", "arg_1", ... of the
// given types and shapes. The first error of any op `body` built is returned.
StatusOr<FunctionDef> BuildFunction(const std::vector<DataType>& arg_types,
                                    const std::vector<TensorShape>& arg_shapes, const FunctionBody& body,
                                    FunctionSignature* signature = nullptr);

}  // namespace tessera
