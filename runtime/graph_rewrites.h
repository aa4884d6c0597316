// The rewrites a session makes to each step's placed graph before partitioning, TensorFlow's
// Grappler in small: constant folding (constant_folding.h), arithmetic simplification
// (arithmetic_simplifier.h), common subexpressions computed once (common_subexpression.h),
// and the remapper's fusions (pads folded into convolutions first: pad_folding.h; scales
// into filters: scale_folding.h; then remapper.h; then blocked_layout.h), in that order, each with its switch in the session config. The rewritten
// graph is what the step runs, and what RunMetadata's partition graphs and
// `tessera run --show-partitions` show.
//
//   ASSIGN_OR_RETURN(step_graph, RewriteStepGraph(std::move(step_graph), RewriteOptionsOf(config)));
//
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tessera {

struct RewriteOptions {
  bool constant_folding = true;      // graph_options.rewrite_options.constant_folding
  bool arithmetic = true;            // graph_options.rewrite_options.arithmetic_optimization
  bool common_subexpression = true;  // graph_options.optimizer_options.do_common_subexpression_elimination
  bool remapping = true;             // graph_options.rewrite_options.remapping
};

struct SessionConfig;
// The switches a session's config sets.
RewriteOptions RewriteOptionsOf(const SessionConfig& config);

// `graph`'s nodes must have assigned devices. Returns the graph itself when nothing changes.
StatusOr<std::unique_ptr<Graph>> RewriteStepGraph(std::unique_ptr<Graph> graph, const RewriteOptions& options);

// What a rewrite that drops a node reads instead: output i of the dropped node is output
// outputs[i] of `node`, and a control edge from it becomes one from `node`.
struct Replacement {
  std::string node;
  std::vector<int> outputs;
};

// What the rewrites ask of a node: that its assigned device is a CPU, that its type
// attr T is float32, that its data_format is NHWC.
bool OnCpu(const Node& n);
bool IsFloat(const Node& n);
bool IsNhwc(const Node& n);

// A Const of `value` named `name`, requested where `like` is.
NodeSpec ConstantLike(std::string name, const Node& like, Tensor value);

// The nodes in an order where each comes after its inputs; empty when there is a cycle
// (a loop's back edge).
std::vector<const Node*> TopologicalOrder(const Graph& graph);

// `placed` without the dropped nodes (by name), every input that read one of them reading
// its replacement instead (through chains of dropped nodes), duplicate control inputs
// merged, and every node on its assigned device.
StatusOr<std::unique_ptr<Graph>> DropNodes(const Graph& placed, const std::map<std::string, Replacement>& dropped);

}  // namespace tessera
