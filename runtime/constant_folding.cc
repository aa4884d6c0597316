#include "runtime/constant_folding.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/device_name.h"
#include "graph/op_kinds.h"
#include "kernels/thread_pool.h"
#include "kernels/vector_call_frame.h"
#include "runtime/device_mgr.h"
#include "runtime/executor.h"
#include "runtime/graph_rewrites.h"

namespace tessera {
namespace {

// A Const that always holds its value: one with a control input runs only where that
// input does (in a branch or a loop).
bool IsPlainConst(const Node& n) { return IsConstant(n.op()) && n.control_inputs().empty(); }

bool IsNeverFolded(std::string_view op) {
  return IsConstant(op) || IsArg(op) || IsRetval(op) || IsPlaceholder(op) || IsNoOp(op) || IsControlFlow(op) ||
         IsSend(op) || IsRecv(op);
}

// Every output a plain tensor of a fully known shape within the bound.
bool SmallOutputs(const Node& n, int64_t max_bytes) {
  for (int i = 0; i < n.num_outputs(); ++i) {
    const size_t element_bytes = DataTypeSize(n.output_type(i));  // 0: strings, handles, objects
    const TensorShape& shape = n.output_shape(i);
    if (n.output_is_ref(i) || element_bytes == 0 || !shape.IsFullyDefined()) return false;
    if (shape.num_elements() > max_bytes / static_cast<int64_t>(element_bytes)) return false;
  }
  return true;
}

bool Foldable(const Node& n, const std::vector<char>& folded, int64_t max_bytes) {
  if (IsNeverFolded(n.op()) || n.is_stateful() || n.num_inputs() == 0 || !n.control_inputs().empty() ||
      !OnCpu(n) || !SmallOutputs(n, max_bytes)) {
    return false;
  }
  for (int i = 0; i < n.num_inputs(); ++i) {
    const Node& src = *n.input_edge(i)->src;
    if (n.input_is_ref(i) || src.assigned_device() != n.assigned_device()) return false;
    if (!IsPlainConst(src) && !folded[src.id()]) return false;
  }
  if (n.num_outputs() == 1) return true;
  // Outputs that become Consts of their own: something must read them, and only data.
  if (n.out_edges().empty()) return false;
  for (const Edge* e : n.out_edges()) {
    if (e->IsControl()) return false;
  }
  return true;
}

// Runs `parts` (the nodes to fold and the Consts they read, with a _Retval per output
// wanted) on a CPU device of its own, and returns the _Retvals' values.
StatusOr<std::vector<Tensor>> Evaluate(const std::vector<NodePart>& parts, size_t num_values,
                                       const OpRegistry* registry) {
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::Assemble(parts, registry));
  ASSIGN_OR_RETURN(std::unique_ptr<ThreadPool> pool, ThreadPool::Create("constant_folding", 1));
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceMgr> devices,
                   DeviceMgr::CreateLocal({{"CPU", 1}, {"GPU", 0}}, pool.get(), HostMemoryBytes()));
  Device* cpu = devices->devices().at(0);
  for (Node* n : graph->nodes()) n->set_assigned_device(cpu->name());
  Executor::Params params;
  params.lookup_device = [cpu](const Node&) -> StatusOr<DeviceBase*> { return cpu; };
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Create(std::move(graph), params));
  VectorCallFrame frame({}, num_values);
  Executor::Args args;
  args.call_frame = &frame;
  RETURN_IF_ERROR(executor->Run(args));
  return std::move(frame.retvals());
}

// The nodes to fold, the values their evaluation returns, and the nodes it leaves unread.
struct Folding {
  std::vector<char> folded;   // by node id
  std::vector<char> dropped;  // by node id: it had readers, and every one was folded
  std::map<std::pair<int, int>, int> value_index;  // (node id, output) -> retval index
  // The folded nodes and the Consts they read, with a _Retval per value.
  std::vector<NodePart> eval;
};

Folding PlanFolding(const Graph& graph, int64_t max_constant_bytes) {
  Folding f;
  f.folded.assign(graph.nodes().size(), 0);
  f.dropped.assign(graph.nodes().size(), 0);
  std::vector<const Node*> to_fold;
  for (const Node* n : TopologicalOrder(graph)) {  // a loop's back edge: none
    if (!Foldable(*n, f.folded, max_constant_bytes)) continue;
    f.folded[n->id()] = 1;
    to_fold.push_back(n);
  }
  // What the evaluation returns: each folded node's outputs that something unfolded reads,
  // and the whole of a single-output node that stays in the graph as a Const.
  const auto read_outside = [&f](const Node& n) {
    for (const Edge* e : n.out_edges()) {
      if (!f.folded[e->dst->id()]) return true;
    }
    return false;
  };
  std::set<int> consts;
  for (const Node* n : to_fold) {
    for (int i = 0; i < n->num_inputs(); ++i) {
      const Node* src = n->input_edge(i)->src;
      if (!f.folded[src->id()] && consts.insert(src->id()).second) f.eval.push_back(NodePart::Copy(*src));
    }
    f.eval.push_back(NodePart::Copy(*n));
  }
  for (int id : consts) f.dropped[id] = !read_outside(*graph.nodes()[id]);
  for (const Node* n : to_fold) {
    f.dropped[n->id()] = !read_outside(*n) && !n->out_edges().empty();
    for (int i = 0; i < n->num_outputs(); ++i) {
      bool wanted = n->num_outputs() == 1 && !f.dropped[n->id()];
      for (const Edge* e : n->out_edges()) wanted = wanted || (e->src_output == i && !f.folded[e->dst->id()]);
      if (!wanted) continue;
      const int index = static_cast<int>(f.value_index.size());
      f.value_index[{n->id(), i}] = index;
      NodePart& ret = f.eval.emplace_back();
      ret.def.name = StrCat(n->name(), "/_folded_retval_", i);
      ret.def.op = "_Retval";
      ret.def.inputs = {StrCat(n->name(), ":", i)};
      ret.def.attrs = {{"index", static_cast<int64_t>(index)}};
    }
  }
  return f;
}

// `graph` with each folded node a Const of its value (a Const per output read, for a node of
// several), and without the nodes nothing reads any more.
StatusOr<std::unique_ptr<Graph>> WithConstants(const Graph& graph, const Folding& f, const std::vector<Tensor>& values) {
  const auto constant = [](std::string name, const Node& folded, const Tensor& value) {
    NodePart part;
    part.def.name = std::move(name);
    part.def.op = "Const";
    part.def.device = folded.requested_device();
    part.def.attrs = {{"dtype", value.dtype()}, {"value", value}};
    part.assigned_device = folded.assigned_device();
    return part;
  };
  std::map<std::pair<std::string, int>, std::string> renamed;  // (node, output) of a multi-output node -> its Const
  std::set<std::string> taken;                                 // the names of those Consts
  std::vector<NodePart> parts;
  for (const Node* n : graph.nodes()) {
    if (f.dropped[n->id()]) continue;
    if (!f.folded[n->id()]) {
      parts.push_back(NodePart::Copy(*n));
    } else if (n->num_outputs() == 1) {
      parts.push_back(constant(n->name(), *n, values[f.value_index.at({n->id(), 0})]));
    } else {
      for (const auto& [key, index] : f.value_index) {
        if (key.first != n->id()) continue;
        std::string name = StrCat(n->name(), "/folded_output_", key.second);
        while (graph.FindNode(name) != nullptr || taken.count(name) != 0) name += "_";
        taken.insert(name);
        renamed[{n->name(), key.second}] = name;
        parts.push_back(constant(name, *n, values[index]));
      }
    }
  }
  for (NodePart& part : parts) {
    for (std::string& input : part.def.inputs) {
      ASSIGN_OR_RETURN(TensorId id, ParseTensorName(input));
      auto it = id.is_control() ? renamed.end() : renamed.find({std::string(id.node), id.index});
      if (it != renamed.end()) input = StrCat(it->second, ":0");
    }
  }
  return Graph::Assemble(parts, graph.op_registry());
}

}  // namespace

StatusOr<std::unique_ptr<Graph>> FoldConstants(std::unique_ptr<Graph> graph, int64_t max_constant_bytes) {
  const Folding folding = PlanFolding(*graph, max_constant_bytes);
  if (folding.eval.empty()) return graph;
  StatusOr<std::vector<Tensor>> values = Evaluate(folding.eval, folding.value_index.size(), graph->op_registry());
  if (!values.ok()) return graph;  // the step meets the same error, where it names the node as run
  return WithConstants(*graph, folding, *values);
}

}  // namespace tessera
