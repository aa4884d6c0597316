#include "placement/extend_graph.h"

#include <map>
#include <string_view>

namespace tessera {

StatusOr<PlacedGraph> ExtendPlacedGraph(const Graph& graph, const std::vector<PlacementRecord>& placement,
                                        const GraphSpec& more, const DeviceSet& devices,
                                        const PlacerOptions& options) {
  GraphSpec all = graph.ToSpec();
  const size_t old_nodes = all.nodes.size();
  for (const NodeSpec& n : more.nodes) {
    if (graph.FindNode(n.name) != nullptr) {
      return errors::InvalidArgument("Session::Extend: node '", n.name, "' is already in the session's graph");
    }
  }
  all.nodes.insert(all.nodes.end(), more.nodes.begin(), more.nodes.end());
  PlacedGraph out;
  ASSIGN_OR_RETURN(out.graph, Graph::FromSpec(all));
  for (size_t i = 0; i < old_nodes; ++i) {
    out.graph->FindNode(all.nodes[i].name)->set_assigned_device(graph.FindNode(all.nodes[i].name)->assigned_device());
  }
  Placer placer(out.graph.get(), devices, options);
  ASSIGN_OR_RETURN(out.placement, placer.Run());
  // The nodes already there keep the reasons they were placed for, not "already assigned".
  std::map<std::string_view, const PlacementRecord*> was;
  for (const PlacementRecord& r : placement) was.emplace(r.node, &r);
  for (PlacementRecord& r : out.placement) {
    auto it = was.find(r.node);
    if (it != was.end()) r = *it->second;
  }
  return out;
}

}  // namespace tessera
