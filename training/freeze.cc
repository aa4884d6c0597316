#include "training/freeze.h"

#include <map>
#include <set>

#include "graph/op_kinds.h"
#include "graph/op_registry.h"

namespace tessera {

StatusOr<GraphSpec> FreezeGraph(Session& session, const std::vector<std::string>& outputs) {
  const GraphSpec def = session.graph().ToSpec();
  std::map<std::string_view, const NodeSpec*> by_name;
  for (const NodeSpec& n : def.nodes) by_name[n.name] = &n;
  // Everything the outputs reach through data and control inputs.
  std::set<std::string_view> kept;
  std::vector<std::string_view> stack;
  for (const std::string& out : outputs) {
    ASSIGN_OR_RETURN(TensorId id, ParseTensorName(out));
    if (by_name.count(id.node) == 0) return errors::NotFound("Output '", out, "' is not in the graph");
    stack.push_back(id.node);
  }
  while (!stack.empty()) {
    std::string_view name = stack.back();
    stack.pop_back();
    if (!kept.insert(name).second) continue;
    for (const std::string& input : by_name.at(name)->inputs) {
      ASSIGN_OR_RETURN(TensorId id, ParseTensorName(input));
      stack.push_back(id.node);
    }
  }
  std::vector<std::string> variables;
  for (std::string_view name : kept) {
    const NodeSpec& n = *by_name.at(name);
    if (IsVariable(n.op)) {
      variables.emplace_back(name);
      continue;
    }
    const OpDef* op = OpRegistry::Global()->Find(n.op);
    for (size_t i = 0; op != nullptr && i < op->inputs.size(); ++i) {
      if (op->inputs[i].is_ref) {
        return errors::InvalidArgument("Cannot freeze: the outputs depend on '", n.name, "' (", n.op,
                                       "), which updates a variable");
      }
    }
  }
  std::vector<Tensor> values;
  if (!variables.empty()) RETURN_IF_ERROR(session.Run({}, variables, {}, &values));
  std::map<std::string_view, const Tensor*> value_of;
  for (size_t i = 0; i < variables.size(); ++i) value_of[variables[i]] = &values[i];

  GraphSpec frozen;
  for (const NodeSpec& n : def.nodes) {
    if (kept.count(n.name) == 0) continue;
    NodeSpec copy = n;
    // Colocation with a node that is gone (an initializer) no longer constrains anything.
    std::erase_if(copy.colocate_with, [&](const std::string& other) { return kept.count(other) == 0; });
    if (auto it = value_of.find(n.name); it != value_of.end()) {
      copy.op = "Const";
      copy.inputs.clear();
      copy.attrs.clear();
      copy.attrs["dtype"] = it->second->dtype();
      copy.attrs["value"] = *it->second;
    }
    frozen.nodes.push_back(std::move(copy));
  }
  return frozen;
}

}  // namespace tessera
