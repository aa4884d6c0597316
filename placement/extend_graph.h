// A placed graph grown by more nodes, as Session::Extend grows a session's graph after its
// first steps (tf.Session allows it): the nodes already placed keep their devices and the
// reasons they were placed for, and the new ones are placed as the Placer places any node
// (next to the old ones they are colocated with). Pure function; thread-safe.
#pragma once

#include <memory>
#include <vector>

#include "graph/graph.h"
#include "graph/graph_spec.h"
#include "placement/device_set.h"
#include "placement/placement_record.h"
#include "placement/placer.h"

namespace tessera {

struct PlacedGraph {
  std::unique_ptr<Graph> graph;
  std::vector<PlacementRecord> placement;  // in node order
};

// `graph`'s nodes are assigned to devices of `devices`, and `placement` is their record.
// InvalidArgument names a node of `more` that `graph` already has; errors of adding or
// placing the new nodes are as Graph::FromSpec and Placer::Run give them.
StatusOr<PlacedGraph> ExtendPlacedGraph(const Graph& graph, const std::vector<PlacementRecord>& placement,
                                        const GraphSpec& more, const DeviceSet& devices,
                                        const PlacerOptions& options);

}  // namespace tessera
