// Graphviz DOT export: one cluster and one fill colour per assigned device (nodes not yet
// placed go in a cluster of their requested device), data edges solid with the tensor's
// dtype and shape, control edges dashed.
//
//   std::string dot = GraphToDot(graph);   // `dot -Tsvg` renders it
#pragma once

#include <string>

#include "graph/graph.h"

namespace tessera {

std::string GraphToDot(const Graph& graph);

}  // namespace tessera
