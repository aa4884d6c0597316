// Constant folding, as TensorFlow's Grappler folds: a stateless node on a CPU whose data
// inputs are all constants (Const nodes, or nodes folded before it) is run once, when the
// step's graph is made, and becomes a Const holding what it computed; its consumers read
// that from then on. A folded node that has one output keeps its name, so a fetch of it
// still finds it; each used output of one with several becomes a Const of its own,
// "<node>/folded_output_<i>".
//
// Bounded: an output whose static shape is not fully known, or that would take more than
// `max_constant_bytes`, is not folded (nor is anything computed from it), so folding never
// makes a large tensor the step would not have made or holds one in the graph. Folding stays
// within a device: a node reading a constant from another device keeps that transfer, as the
// graph's author placed it. Left alone:
// stateful ops (variables, random numbers, queues), control flow and anything in a loop or
// a branch (a node with control inputs), feeds and fetches, references and resource
// handles, and nodes on other devices than CPUs (a GPU's shape arguments live in host
// memory). When running the foldable nodes fails (say, a Reshape of constants to a size
// they do not have), nothing is folded and the step reports the error as it would have.
//
//   ASSIGN_OR_RETURN(step_graph, FoldConstants(std::move(step_graph)));
//
// Pure function; thread-safe (the nodes run on a CPU device made for the purpose).
#pragma once

#include <cstdint>
#include <memory>

#include "graph/graph.h"

namespace tessera {

// TensorFlow's limit for one folded constant.
inline constexpr int64_t kMaxFoldedConstantBytes = int64_t{10} << 20;

// `graph`'s nodes must have assigned devices. Returns `graph` itself when nothing folds.
StatusOr<std::unique_ptr<Graph>> FoldConstants(std::unique_ptr<Graph> graph,
                                               int64_t max_constant_bytes = kMaxFoldedConstantBytes);

}  // namespace tessera
