#include "placement/colocation.h"

#include <algorithm>

namespace tessera {
namespace {

// Merges two requests of colocated nodes, as TensorFlow's MergeDevNames: a conflicting
// job, replica or task is always an error; a conflicting type or id is an error unless
// soft placement is allowed, in which case the conflicting fields are dropped.
Status MergeRequests(DeviceName* target, const DeviceName& src, bool allow_soft) {
  if (allow_soft) {
    DeviceName relaxed = src;
    if (target->has_type && src.has_type && target->type != src.type) {
      target->has_type = target->has_id = false;
      relaxed.has_type = relaxed.has_id = false;
    }
    if (target->has_id && src.has_id && target->id != src.id) {
      target->has_id = false;
      relaxed.has_id = false;
    }
    ASSIGN_OR_RETURN(*target, DeviceName::MergeStrict(*target, relaxed));
    return Status::OK();
  }
  ASSIGN_OR_RETURN(*target, DeviceName::MergeStrict(*target, src));
  return Status::OK();
}

}  // namespace

ColocationGraph::ColocationGraph(const Graph& graph, const DeviceSet& devices,
                                 const KernelRegistry& kernels, bool allow_soft_placement)
    : graph_(graph), devices_(devices), kernels_(kernels), allow_soft_placement_(allow_soft_placement) {}

int ColocationGraph::Find(int id) const {
  while (parent_[id] != id) {
    parent_[id] = parent_[parent_[id]];
    id = parent_[id];
  }
  return id;
}

Status ColocationGraph::Initialize() {
  const int n = graph_.num_nodes();
  parent_.resize(n);
  rank_.assign(n, 0);
  requested_.resize(n);
  groups_.resize(n);
  const std::vector<std::string> types = devices_.Types();
  for (const Node* node : graph_.nodes()) {
    parent_[node->id()] = node->id();
    StatusOr<DeviceName> req = DeviceName::Parse(node->requested_device());
    if (!req.ok()) {
      return req.status().WithSuffix(StrCat(" (requested by node ", node->DebugName(), ")"));
    }
    requested_[node->id()] = *req;
    Group& g = groups_[node->id()];
    g.requested = *req;
    g.assigned = node->assigned_device();
    g.members = {node};
    for (const std::string& t : types) {
      if (kernels_.Find(*node, t) != nullptr) g.supported_types.push_back(t);
    }
  }
  for (const Node* node : graph_.nodes()) {
    for (const std::string& other : node->colocate_with()) {
      const Node* target = graph_.FindNode(other);
      if (target == nullptr) {
        return errors::InvalidArgument("Node ", node->DebugName(), " is asked to be colocated with '",
                                       other, "', which is not in the graph");
      }
      RETURN_IF_ERROR(Unite(*node, *target));
    }
    for (int i = 0; i < node->num_inputs(); ++i) {
      if (node->input_is_ref(i) || node->input_type(i) == DataType::kResource) {
        RETURN_IF_ERROR(Unite(*node, *node->input_edge(i)->src));
      }
    }
  }
  return Status::OK();
}

Status ColocationGraph::Unite(const Node& a, const Node& b) {
  int ra = Find(a.id()), rb = Find(b.id());
  if (ra == rb) return Status::OK();
  Group& ga = groups_[ra];
  Group& gb = groups_[rb];
  auto fail = [&](const Status& why) {
    return errors::InvalidArgument("Cannot colocate nodes '", a.name(), "' and '", b.name(),
                                   "': ", why.message());
  };
  DeviceName merged = ga.requested;
  Status s = MergeRequests(&merged, gb.requested, allow_soft_placement_);
  if (!s.ok()) return fail(s);
  if (!ga.assigned.empty() && !gb.assigned.empty() && ga.assigned != gb.assigned) {
    return fail(errors::InvalidArgument("they are already assigned to '", ga.assigned, "' and '",
                                        gb.assigned, "'"));
  }
  std::vector<std::string> types;
  for (const std::string& t : ga.supported_types) {
    if (std::find(gb.supported_types.begin(), gb.supported_types.end(), t) != gb.supported_types.end()) {
      types.push_back(t);
    }
  }
  if (types.empty()) {
    return fail(errors::InvalidArgument(
        "no device type has kernels for both: ", a.op(), " supports [",
        JoinDeviceTypes(ga.supported_types), "], ", b.op(), " supports [",
        JoinDeviceTypes(gb.supported_types), "]"));
  }
  if (rank_[ra] < rank_[rb]) std::swap(ra, rb);
  Group& root = groups_[ra];
  Group& child = groups_[rb];
  root.requested = merged;
  if (root.assigned.empty()) root.assigned = child.assigned;
  root.supported_types = std::move(types);
  root.members.insert(root.members.end(), child.members.begin(), child.members.end());
  std::sort(root.members.begin(), root.members.end(),
            [](const Node* x, const Node* y) { return x->id() < y->id(); });
  child.members.clear();
  parent_[rb] = ra;
  if (rank_[ra] == rank_[rb]) ++rank_[ra];
  return Status::OK();
}

}  // namespace tessera
