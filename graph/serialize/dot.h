// Graphviz DOT export: one cluster and one fill colour per assigned device (nodes not yet
// placed go in a cluster of their requested device), data edges solid with the tensor's
// dtype and shape, control edges dashed. In a partitioned graph each _Send is joined to
// its _Recv by a bold red edge between the device clusters, labelled with the tensor.
//
//   std::string dot = GraphToDot(graph);   // `dot -Tsvg` renders it
#pragma once

#include <string>

#include "graph/graph.h"

namespace tessera {

std::string GraphToDot(const Graph& graph);

}  // namespace tessera
