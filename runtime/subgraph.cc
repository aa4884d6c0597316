#include "runtime/subgraph.h"

#include <map>
#include <set>

namespace tessera {
namespace {

StatusOr<std::pair<const Node*, int>> Resolve(const Graph& g, const std::string& name,
                                              std::string_view what, bool allow_control) {
  ASSIGN_OR_RETURN(TensorId id, ParseTensorName(name));
  if (id.is_control() && !allow_control) {
    return errors::InvalidArgument(what, " '", name, "' must name a tensor, not a control input");
  }
  const Node* n = g.FindNode(id.node);
  if (n == nullptr) {
    return errors::NotFound(what, " '", name, "' names node '", id.node, "', which is not in the graph");
  }
  if (!id.is_control() && id.index >= n->num_outputs() && !(allow_control && id.index == 0)) {
    return errors::InvalidArgument(what, " '", name, "': node ", n->DebugName(), " has only ",
                                   n->num_outputs(), " outputs");
  }
  return std::make_pair(n, id.index);
}

std::string Key(const Node* n, int index) { return StrCat(n->name(), ":", index); }

}  // namespace

namespace {

// The nodes the roots depend on through data and control edges, walking back from them;
// fed edges are cut. By node id.
std::vector<bool> NeededNodes(const Graph& placed, std::vector<const Node*> roots,
                              const std::map<std::string, int>& fed) {
  std::vector<bool> needed(placed.num_nodes(), false);
  std::vector<const Node*> stack = std::move(roots);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (needed[n->id()]) continue;
    needed[n->id()] = true;
    for (int i = 0; i < n->num_inputs(); ++i) {
      const Edge* e = n->input_edge(i);
      if (fed.count(Key(e->src, e->src_output)) == 0) stack.push_back(e->src);
    }
    for (const Edge* e : n->control_inputs()) stack.push_back(e->src);
  }
  return needed;
}

// The needed nodes between an _Arg per feed and a _Retval per fetch, assembled as a new
// graph, so that a while loop's back edges are connected like any graph's.
StatusOr<std::unique_ptr<Graph>> AssembleStep(const Graph& placed, const Subgraph& step, const std::vector<bool>& needed,
                                              const std::map<std::string, int>& fed) {
  std::vector<NodePart> parts;
  std::vector<std::string> arg_names(step.feeds.size());
  for (size_t i = 0; i < step.feeds.size(); ++i) {
    const SubgraphTensor& f = step.feeds[i];
    NodePart& arg = parts.emplace_back();
    arg.def.name = StrCat("_arg_", f.node, "_", f.index, "_", i);
    arg.def.op = "_Arg";
    arg.def.attrs = {{"T", f.dtype}, {"index", static_cast<int64_t>(i)}, {"shape", f.shape}};
    arg.assigned_device = f.device;
    arg_names[i] = arg.def.name;
  }
  for (const Node* n : placed.nodes()) {
    if (!needed[n->id()]) continue;
    NodePart& copy = parts.emplace_back(NodePart::Copy(*n));
    copy.def.colocate_with.clear();  // placement is done; the group may not be in the subgraph
    for (int i = 0; i < n->num_inputs(); ++i) {
      const Edge* e = n->input_edge(i);
      auto it = fed.find(Key(e->src, e->src_output));
      if (it != fed.end()) copy.def.inputs[i] = arg_names[it->second];
    }
  }
  for (size_t i = 0; i < step.fetches.size(); ++i) {
    const SubgraphTensor& f = step.fetches[i];
    auto it = fed.find(StrCat(f.node, ":", f.index));
    NodePart& ret = parts.emplace_back();
    ret.def.name = StrCat("_retval_", f.node, "_", f.index, "_", i);
    ret.def.op = "_Retval";
    ret.def.inputs = {it != fed.end() ? arg_names[it->second] : StrCat(f.node, ":", f.index)};
    ret.def.attrs = {{"index", static_cast<int64_t>(i)}};
    ret.assigned_device = f.device;
  }
  return Graph::Assemble(parts, placed.op_registry());
}

}  // namespace

StatusOr<Subgraph> BuildSubgraph(const Graph& placed, const std::vector<std::string>& feeds,
                                 const std::vector<std::string>& fetches,
                                 const std::vector<std::string>& targets) {
  Subgraph out;
  std::map<std::string, int> fed;  // "node:index" -> feed position
  for (const std::string& f : feeds) {
    ASSIGN_OR_RETURN(auto t, Resolve(placed, f, "Feed", false));
    std::string key = Key(t.first, t.second);
    if (!fed.emplace(key, static_cast<int>(out.feeds.size())).second) {
      return errors::InvalidArgument("Tensor '", key, "' is fed more than once");
    }
    out.feeds.push_back({t.first->name(), t.second, t.first->output_type(t.second),
                         t.first->output_shape(t.second), t.first->assigned_device()});
  }
  std::vector<const Node*> roots;
  for (const std::string& f : fetches) {
    ASSIGN_OR_RETURN(auto t, Resolve(placed, f, "Fetch", false));
    out.fetches.push_back({t.first->name(), t.second, t.first->output_type(t.second),
                           t.first->output_shape(t.second), t.first->assigned_device()});
    if (fed.count(Key(t.first, t.second)) == 0) roots.push_back(t.first);
  }
  for (const std::string& t : targets) {
    std::string name = t.starts_with("^") ? t.substr(1) : t;
    const Node* n = placed.FindNode(name);
    if (n == nullptr) {
      return errors::NotFound("Target '", t, "' names a node that is not in the graph");
    }
    roots.push_back(n);
  }
  ASSIGN_OR_RETURN(out.graph, AssembleStep(placed, out, NeededNodes(placed, std::move(roots), fed), fed));
  return out;
}

std::string StepSignature(const std::vector<std::pair<std::string, Tensor>>& feeds,
                          const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
  std::string key;
  for (const auto& f : feeds) key.append(f.first).push_back(',');
  key.push_back('>');
  for (const auto& f : fetches) key.append(f).push_back(',');
  key.push_back('>');
  for (const auto& t : targets) key.append(t).push_back(',');
  return key;
}

Status CheckFeed(std::string_view name, const Tensor& value, const SubgraphTensor& want) {
  if (value.dtype() != want.dtype) {
    return errors::InvalidArgument("Cannot feed a ", DataTypeName(value.dtype()), " tensor to '", name,
                                   "', which has dtype ", DataTypeName(want.dtype));
  }
  if (!value.shape().IsCompatibleWith(want.shape)) {
    return errors::InvalidArgument("Cannot feed value of shape ", value.shape().DebugString(), " for tensor '", name,
                                   "', which has shape ", want.shape.DebugString());
  }
  return Status::OK();
}

}  // namespace tessera
