// Arithmetic simplification, in the spirit of TensorFlow's arithmetic optimizer: nodes that
// hand on their input unchanged go, and their consumers read that input. x * 1, 1 * x,
// x + 0, 0 + x and x - 0 (the constant all ones or all zeros, the result x's own shape),
// Neg(Neg(x)), and Identity chains. Kept: an Identity after control flow (a Switch's branch
// needs it for deadness), one reading a reference (it reads the variable at that moment),
// a node with control inputs, and one whose input is on another device.
//
//   ASSIGN_OR_RETURN(step_graph, SimplifyArithmetic(std::move(step_graph)));
//
// Pure function; thread-safe.
#pragma once

#include <memory>

#include "graph/graph.h"

namespace tessera {

// `graph`'s nodes must have assigned devices. Returns `graph` itself when nothing changes.
StatusOr<std::unique_ptr<Graph>> SimplifyArithmetic(std::unique_ptr<Graph> graph);

}  // namespace tessera
