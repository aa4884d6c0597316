// The JSON form of graphs and tensors, used by `tessera run`, feeds and tests.
//
//   {"nodes": [{"name": "w", "op": "Const", "device": "/cpu:1", "inputs": ["a", "b:1", "^c"],
//               "colocate_with": ["v"],
//               "attrs": {"value": {"dtype": "float32", "shape": [2, 2], "data": [1, 2, 3, 4]},
//                         "dtype": "float32"}}]}
//
// A tensor is {"dtype", "shape", "data"}, data flat and row-major (strings as JSON strings,
// non-finite floats as "nan", "inf", "-inf"). Shapes in attrs may hold null or -1 for an
// unknown dimension, or be null for an unknown rank. Attr values are read by the type the
// op declares for them, so an op must be registered before its JSON can be read.
// Every function here is thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "graph/graph_spec.h"
#include "graph/op_registry.h"
#include "graph/tensor.h"

namespace tessera {

// Malformed JSON, an unknown key, an unknown op or an attr value of the wrong form is an
// InvalidArgument (NotFound for the op) naming the node.
StatusOr<GraphSpec> GraphSpecFromJson(std::string_view text, const OpRegistry* ops = OpRegistry::Global());
std::string GraphSpecToJson(const GraphSpec& def);

// The names before the remodel; kept for one release.
[[deprecated("GraphDefFromJson is GraphSpecFromJson")]] inline StatusOr<GraphSpec> GraphDefFromJson(
    std::string_view text, const OpRegistry* ops = OpRegistry::Global()) {
  return GraphSpecFromJson(text, ops);
}
[[deprecated("GraphDefToJson is GraphSpecToJson")]] inline std::string GraphDefToJson(const GraphSpec& def) {
  return GraphSpecToJson(def);
}

StatusOr<Tensor> TensorFromJson(const nlohmann::json& j);
StatusOr<Tensor> TensorFromJsonText(std::string_view text);
nlohmann::json TensorToJson(const Tensor& t);

}  // namespace tessera
