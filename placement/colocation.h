// ColocationGraph: nodes that must share a device, grouped by union-find.
//
// A group forms from explicit colocation (Scope::ColocateWith, JSON "colocate_with") and
// from reference edges (a Variable with the Assign ops that write it). Each group carries
// the merged device request of its members, the device types with a kernel for every
// member, and an assigned device if a member already had one.
//
// Not thread-safe; the placer uses it from one thread.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "kernels/kernel_registry.h"
#include "placement/device_set.h"

namespace tessera {

class ColocationGraph {
 public:
  struct Group {
    DeviceName requested;                 // merged requests of the members
    std::string assigned;                 // a member's pre-assigned device, or ""
    std::vector<std::string> supported_types;  // in the device set's priority order
    std::vector<const Node*> members;      // in node id order
  };

  // All arguments are borrowed and must outlive this object.
  ColocationGraph(const Graph& graph, const DeviceSet& devices, const KernelRegistry& kernels,
                  bool allow_soft_placement);

  // Parses every request and forms the groups. InvalidArgument for a malformed device
  // string, an unknown colocation target, or members whose requests conflict.
  Status Initialize();

  const Group& GroupOf(const Node& node) const { return groups_[Find(node.id())]; }
  int GroupId(const Node& node) const { return Find(node.id()); }
  // The node's own parsed request.
  const DeviceName& Requested(const Node& node) const { return requested_[node.id()]; }

 private:
  int Find(int id) const;
  Status Unite(const Node& a, const Node& b);

  const Graph& graph_;
  const DeviceSet& devices_;
  const KernelRegistry& kernels_;
  const bool allow_soft_placement_;
  mutable std::vector<int> parent_;
  std::vector<int> rank_;
  std::vector<DeviceName> requested_;
  std::vector<Group> groups_;  // valid at roots
};

}  // namespace tessera
