#include "runtime/graph_rewrites.h"

#include <algorithm>

#include "graph/device_name.h"

#include "runtime/arithmetic_simplifier.h"
#include "runtime/blocked_layout.h"
#include "runtime/common_subexpression.h"
#include "runtime/constant_folding.h"
#include "runtime/pad_folding.h"
#include "runtime/remapper.h"
#include "runtime/scale_folding.h"
#include "runtime/session_options.h"

namespace tessera {

RewriteOptions RewriteOptionsOf(const SessionConfig& config) {
  return {config.constant_folding, config.arithmetic_optimization, config.common_subexpression_elimination,
          config.remapping};
}

StatusOr<std::unique_ptr<Graph>> RewriteStepGraph(std::unique_ptr<Graph> graph, const RewriteOptions& options) {
  if (options.constant_folding) {
    ASSIGN_OR_RETURN(graph, FoldConstants(std::move(graph)));
  }
  if (options.arithmetic) {
    ASSIGN_OR_RETURN(graph, SimplifyArithmetic(std::move(graph)));
  }
  if (options.common_subexpression) {
    ASSIGN_OR_RETURN(graph, EliminateCommonSubexpressions(std::move(graph)));
  }
  if (options.remapping) {
    ASSIGN_OR_RETURN(graph, FoldPadsIntoConvolutions(std::move(graph)));
    ASSIGN_OR_RETURN(graph, FoldScalesIntoFilters(std::move(graph)));
    ASSIGN_OR_RETURN(graph, Remap(std::move(graph)));
    ASSIGN_OR_RETURN(graph, UseBlockedLayout(std::move(graph)));
  }
  return graph;
}

bool OnCpu(const Node& n) {
  StatusOr<DeviceName> device = DeviceName::Parse(n.assigned_device());
  return device.ok() && device->type == "CPU";
}

bool IsFloat(const Node& n) {
  DataType t = DataType::kInvalid;
  return n.GetAttr("T", &t).ok() && t == DataType::kFloat;
}

bool IsNhwc(const Node& n) {
  std::string format;
  return n.GetAttr("data_format", &format).ok() && format == "NHWC";
}

NodeSpec ConstantLike(std::string name, const Node& like, Tensor value) {
  NodeSpec c;
  c.name = std::move(name);
  c.op = "Const";
  c.device = like.requested_device();
  c.attrs = {{"dtype", value.dtype()}, {"value", std::move(value)}};
  return c;
}

std::vector<const Node*> TopologicalOrder(const Graph& graph) {
  std::vector<int> pending(graph.nodes().size());
  std::vector<const Node*> order;
  for (const Node* n : graph.nodes()) {
    pending[n->id()] = n->num_inputs() + static_cast<int>(n->control_inputs().size());
    if (pending[n->id()] == 0) order.push_back(n);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    for (const Edge* e : order[i]->out_edges()) {
      if (--pending[e->dst->id()] == 0) order.push_back(e->dst);
    }
  }
  if (order.size() != graph.nodes().size()) order.clear();
  return order;
}

StatusOr<std::unique_ptr<Graph>> DropNodes(const Graph& placed, const std::map<std::string, Replacement>& dropped) {
  // The live tensor behind (node, output), following replacements that were dropped too.
  const auto resolve = [&dropped](std::string node, int output) {
    for (size_t hops = 0; hops <= dropped.size(); ++hops) {
      auto it = dropped.find(node);
      if (it == dropped.end()) break;
      if (output >= 0) output = it->second.outputs.at(output);
      node = it->second.node;
    }
    return std::make_pair(node, output);
  };
  std::vector<NodePart> parts;
  parts.reserve(placed.nodes().size());
  for (const Node* n : placed.nodes()) {
    if (dropped.count(n->name()) != 0) continue;
    NodePart& part = parts.emplace_back(NodePart::Copy(*n));
    std::vector<std::string> inputs;
    for (const std::string& input : part.def.inputs) {
      ASSIGN_OR_RETURN(TensorId id, ParseTensorName(input));
      const auto [node, output] = resolve(std::string(id.node), id.is_control() ? -1 : id.index);
      std::string name = output < 0 ? StrCat("^", node) : StrCat(node, ":", output);
      if (output >= 0 || std::find(inputs.begin(), inputs.end(), name) == inputs.end()) inputs.push_back(std::move(name));
    }
    part.def.inputs = std::move(inputs);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> rewritten, Graph::Assemble(parts, placed.op_registry()));
  return rewritten;
}

}  // namespace tessera
