#include "runtime/freeze.h"

#include <map>
#include <set>

#include "graph/op_kinds.h"
#include "graph/op_registry.h"

namespace tessera {
namespace {

// What a resource variable's handle may pass through on its way to a read: these carry the
// handle unchanged, so once the handle is the value they carry the value.
bool CarriesHandle(std::string_view op) { return op == "Identity" || op == "Enter"; }

// The nodes that run inside a while loop's frame: those an Enter reaches without an Exit.
std::set<std::string_view> InFrames(const GraphSpec& def) {
  std::map<std::string_view, std::vector<const NodeSpec*>> consumers;
  for (const NodeSpec& n : def.nodes) {
    for (const std::string& in : n.inputs) {
      StatusOr<TensorId> id = ParseTensorName(in);
      if (id.ok()) consumers[id->node].push_back(&n);
    }
  }
  std::set<std::string_view> in_frames;
  std::vector<std::string_view> stack;
  for (const NodeSpec& n : def.nodes) {
    if (IsEnter(n.op)) stack.push_back(n.name);
  }
  while (!stack.empty()) {
    std::string_view name = stack.back();
    stack.pop_back();
    if (!in_frames.insert(name).second) continue;
    for (const NodeSpec* c : consumers[name]) {
      if (!IsExit(c->op)) stack.push_back(c->name);
    }
  }
  return in_frames;
}

}  // namespace

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
  // A resource variable's handle op, for every node its handle reaches.
  std::map<std::string_view, std::string_view> handle_of;
  for (const NodeSpec& n : def.nodes) {
    if (n.op == "VarHandleOp") handle_of[n.name] = n.name;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const NodeSpec& n : def.nodes) {
      if (handle_of.count(n.name) != 0 || n.inputs.empty()) continue;
      ASSIGN_OR_RETURN(TensorId id, ParseTensorName(n.inputs[0]));
      auto h = handle_of.find(id.node);
      if (h == handle_of.end() || !(CarriesHandle(n.op) || n.op == "ReadVariableOp")) continue;
      handle_of[n.name] = h->second;
      changed = true;
    }
  }
  const std::set<std::string_view> in_frames = InFrames(def);
  std::vector<std::string> variables;          // reference variables, fetched as themselves
  std::map<std::string_view, std::string> reads;  // handle op -> a read of it outside any loop
  for (std::string_view name : kept) {
    const NodeSpec& n = *by_name.at(name);
    if (IsVariable(n.op)) {
      variables.emplace_back(name);
      continue;
    }
    if (n.op == "ReadVariableOp" && handle_of.count(name) != 0 && in_frames.count(name) == 0) {
      reads.emplace(handle_of.at(name), n.name);
    }
    const OpDef* op = OpRegistry::Global()->Find(n.op);
    for (size_t i = 0; op != nullptr && i < op->inputs.size(); ++i) {
      const bool updates_resource = i < n.inputs.size() && op->inputs[i].type == DataType::kResource &&
                                    !CarriesHandle(n.op) && n.op != "ReadVariableOp";
      if (op->inputs[i].is_ref || updates_resource) {
        return errors::InvalidArgument("Cannot freeze: the outputs depend on '", n.name, "' (", n.op,
                                       "), which updates a variable");
      }
    }
  }
  for (std::string_view name : kept) {
    if (by_name.at(name)->op == "VarHandleOp" && reads.count(name) == 0) {
      return errors::Unimplemented("Cannot freeze resource variable '", name,
                                   "': the outputs read it only inside a while loop");
    }
  }
  std::vector<std::string> fetches = variables;
  for (const auto& [handle, read] : reads) fetches.push_back(read);
  std::vector<Tensor> values;
  if (!fetches.empty()) RETURN_IF_ERROR(session.Run({}, fetches, {}, &values));
  std::map<std::string_view, const Tensor*> value_of;
  for (size_t i = 0; i < variables.size(); ++i) value_of[variables[i]] = &values[i];
  size_t i = variables.size();
  for (const auto& [handle, read] : reads) value_of[handle] = &values[i++];

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
    } else if (auto h = handle_of.find(n.name); h != handle_of.end()) {
      // The handle became its value: what carried it carries the value, a read passes it on.
      const DataType dtype = value_of.at(h->second)->dtype();
      if (n.op == "ReadVariableOp") {
        copy.op = "Identity";
        copy.attrs.clear();
        copy.attrs["T"] = dtype;
      } else {
        copy.attrs["T"] = dtype;
        if (IsEnter(n.op)) copy.attrs["is_constant"] = true;
      }
    }
    frozen.nodes.push_back(std::move(copy));
  }
  return frozen;
}

}  // namespace tessera
