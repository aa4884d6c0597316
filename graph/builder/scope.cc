#include "graph/builder/scope.h"

#include <algorithm>
#include <map>

#include "graph/device_name.h"

namespace tessera {

struct Scope::Shared {
  std::unique_ptr<Graph> owned;  // null for a borrowed graph
  Graph* graph = nullptr;
  Status status;
  std::map<std::string, int, std::less<>> name_counts;  // base name -> times used
};

std::string Output::name() const {
  return index == 0 ? node->name() : StrCat(node->name(), ":", index);
}

Scope::Scope(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

Scope Scope::NewRootScope() { return NewRootScope(OpRegistry::Global()); }

Scope Scope::NewRootScope(const OpRegistry* ops) {
  auto shared = std::make_shared<Shared>();
  shared->owned = std::make_unique<Graph>(ops);
  shared->graph = shared->owned.get();
  return Scope(std::move(shared));
}

Scope Scope::ForGraph(Graph* graph, std::string name_scope) {
  auto shared = std::make_shared<Shared>();
  shared->graph = graph;
  for (const Node* n : graph->nodes()) {
    const std::string& name = n->name();
    shared->name_counts.try_emplace(name, 0);
    for (size_t slash = name.find('/'); slash != std::string::npos; slash = name.find('/', slash + 1)) {
      shared->name_counts.try_emplace(name.substr(0, slash), 0);
    }
  }
  Scope s(std::move(shared));
  if (!name_scope.empty()) s.prefix_ = name_scope + "/";
  return s;
}

std::string Scope::UniqueName(std::string_view base) const {
  std::string name(base);
  auto [it, inserted] = shared_->name_counts.try_emplace(name, 0);
  if (inserted) return name;
  // "Add" -> "Add_1", "Add_2", ... skipping names taken explicitly.
  std::string candidate;
  do {
    candidate = StrCat(name, "_", ++it->second);
  } while (shared_->name_counts.count(candidate) != 0);
  shared_->name_counts.emplace(candidate, 0);
  return candidate;
}

Scope Scope::WithOpName(std::string name) const {
  Scope s = *this;
  s.op_name_ = std::move(name);
  return s;
}

Scope Scope::NewSubScope(std::string name) const {
  Scope s = *this;
  s.op_name_.clear();
  if (!name.empty()) s.prefix_ = UniqueName(prefix_ + name) + "/";
  return s;
}

Scope Scope::WithDevice(std::string device) const {
  Scope s = *this;
  StatusOr<DeviceName> parsed = DeviceName::Parse(device);
  if (!parsed.ok()) {
    UpdateStatus(parsed.status());
    return s;
  }
  s.devices_.push_back({std::move(device), nullptr});
  return s;
}

Scope Scope::WithDeviceFunction(DeviceFunction fn) const {
  Scope s = *this;
  s.devices_.push_back({"", std::move(fn)});
  return s;
}

Scope Scope::WithControlDependencies(const std::vector<Operation>& deps) const {
  Scope s = *this;
  s.control_deps_.insert(s.control_deps_.end(), deps.begin(), deps.end());
  return s;
}

Scope Scope::WithNoControlDependencies() const {
  Scope s = *this;
  s.control_deps_.clear();
  return s;
}

Scope Scope::ColocateWith(const Operation& op) const {
  Scope s = *this;
  if (op.node() == nullptr) return s;
  s.colocate_with_.push_back(op.name());
  s.devices_.clear();
  return s;
}

Scope Scope::WithContainer(std::string container) const {
  Scope s = *this;
  s.container_ = std::move(container);
  return s;
}

Scope Scope::WithFrameCapture(std::shared_ptr<const FrameCapture> frame) const {
  Scope s = *this;
  s.frame_ = std::move(frame);
  return s;
}

Status Scope::status() const { return shared_->status; }
Graph* Scope::graph() const { return shared_->graph; }

void Scope::UpdateStatus(const Status& s) const {
  if (shared_->status.ok() && !s.ok()) shared_->status = s;
}

Status Scope::ToSpec(GraphSpec* def) const {
  RETURN_IF_ERROR(shared_->status);
  *def = shared_->graph->ToSpec();
  return Status::OK();
}

Node* Scope::AddNode(NodeSpec def) const {
  if (!ok()) return nullptr;
  if (!op_name_.empty()) {
    def.name = prefix_ + op_name_;
    // A node may share its name with a sub-scope ("Adam" beside "Adam/update_w"), as in
    // TensorFlow, but not with another node.
    if (shared_->graph->FindNode(def.name) != nullptr) {
      UpdateStatus(errors::InvalidArgument("Duplicate node name '", def.name, "'"));
      return nullptr;
    }
    shared_->name_counts.try_emplace(def.name, 0);
  } else {
    def.name = UniqueName(prefix_ + def.op);
  }
  if (frame_ != nullptr && std::all_of(def.inputs.begin(), def.inputs.end(),
                                       [](const std::string& in) { return in.starts_with('^'); })) {
    def.inputs.push_back("^" + frame_->pivot.name());
  }
  for (const Operation& dep : control_deps_) def.inputs.push_back("^" + dep.name());
  def.colocate_with.insert(def.colocate_with.end(), colocate_with_.begin(), colocate_with_.end());
  if (!container_.empty()) {
    const OpDef* op = graph()->op_registry()->Find(def.op);
    if (op != nullptr && op->FindAttr("container") != nullptr && def.attrs.count("container") == 0) {
      def.attrs["container"] = AttrValue(container_);
    }
  }
  // Device strings first (they need no node); functions see the node, so apply the stack
  // after adding it. Both go innermost first.
  StatusOr<DeviceName> requested = DeviceName::Parse(def.device);
  if (!requested.ok()) {
    UpdateStatus(requested.status().WithSuffix(StrCat(" (node '", def.name, "')")));
    return nullptr;
  }
  StatusOr<Node*> node = graph()->AddNode(def);
  if (!node.ok()) {
    UpdateStatus(node.status());
    return nullptr;
  }
  DeviceName device = *requested;
  bool by_function = false;
  for (auto it = devices_.rbegin(); it != devices_.rend(); ++it) {
    if (it->fn) {
      (*node)->set_requested_device(device.ToString());
      StatusOr<DeviceName> chosen = DeviceName::Parse(it->fn(**node));
      if (!chosen.ok()) {
        UpdateStatus(chosen.status().WithSuffix(
            StrCat(" (returned by a device function for node ", (*node)->DebugName(), ")")));
        return nullptr;
      }
      device = *chosen;
      by_function = true;
    } else {
      device.FillFrom(*DeviceName::Parse(it->device));
    }
  }
  (*node)->set_requested_device(device.ToString());
  (*node)->set_requested_by_function(by_function);
  return *node;
}

Output Scope::AsOutput(const Input& in) const {
  if (!in.is_constant()) {
    if (in.output().node == nullptr) {
      UpdateStatus(errors::InvalidArgument("An op input is the result of a failed op"));
      return in.output();
    }
    return frame_ == nullptr ? in.output() : frame_->capture(in.output());
  }
  NodeSpec def;
  def.op = "Const";
  def.attrs["value"] = AttrValue(in.tensor());
  def.attrs["dtype"] = AttrValue(in.tensor().dtype());
  // An implicit constant gets the scope's context but never the explicit op name.
  return Output(WithOpName("").AddNode(std::move(def)));
}

}  // namespace tessera
