// BuildSubgraph: the part of a placed graph one Session::Run needs, rewritten so feeds come
// from _Arg nodes and fetches go to _Retval nodes.
//
//   auto sub = BuildSubgraph(placed, {"x:0"}, {"y:0"}, {"train"});
//
// Nodes are kept when a fetch or target depends on them through data or control edges,
// stopping at fed tensors: a fed output is never computed, its consumers read the _Arg.
// _Arg i and _Retval i sit on the device of the tensor they replace. Every kept node keeps
// its assigned device. Pure function; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace tessera {

struct SubgraphTensor {
  std::string node;
  int index = 0;
  DataType dtype = DataType::kInvalid;
  TensorShape shape;   // statically known shape of the tensor
  std::string device;  // where it lives
};

struct Subgraph {
  std::unique_ptr<Graph> graph;
  std::vector<SubgraphTensor> feeds;    // in the order asked
  std::vector<SubgraphTensor> fetches;  // in the order asked
};

// The key a session caches a step's executors under: its feeds' names, fetches and targets.
std::string StepSignature(const std::vector<std::pair<std::string, Tensor>>& feeds,
                          const std::vector<std::string>& fetches, const std::vector<std::string>& targets);

// InvalidArgument, in TensorFlow's words, when `value` cannot be fed to `want` (named
// `name` by the caller): another dtype, or a shape incompatible with its static shape.
Status CheckFeed(std::string_view name, const Tensor& value, const SubgraphTensor& want);

// NotFound for a feed, fetch or target naming a node that is not in the graph;
// InvalidArgument for a malformed name, an output index out of range, or a tensor fed twice.
StatusOr<Subgraph> BuildSubgraph(const Graph& placed, const std::vector<std::string>& feeds,
                                 const std::vector<std::string>& fetches,
                                 const std::vector<std::string>& targets);

}  // namespace tessera
