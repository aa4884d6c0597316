// Common-subexpression elimination, as TensorFlow's optimizer does it: of the stateless
// nodes that compute the same op with the same attrs from the same inputs on the same
// device, the first stays and the others' consumers read it instead. Stateful ops (variables,
// random numbers, queues), control flow, the session's feeds and fetches and anything
// reading or making a reference are never merged.
//
//   ASSIGN_OR_RETURN(step_graph, EliminateCommonSubexpressions(std::move(step_graph)));
//
// Pure function; thread-safe.
#pragma once

#include <memory>

#include "graph/graph.h"

namespace tessera {

// `graph`'s nodes must have assigned devices. Returns `graph` itself when nothing merges.
StatusOr<std::unique_ptr<Graph>> EliminateCommonSubexpressions(std::unique_ptr<Graph> graph);

}  // namespace tessera
