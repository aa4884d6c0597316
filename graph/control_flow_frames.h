// The static frames of a graph with TensorFlow 1.x loops, found as TensorFlow's
// BuildControlFlowInfo finds them: walking from the roots, an Enter's outputs are in the frame
// it names, an Exit's in its loop's parent frame, every other node's in its inputs' frame.
// The partitioner (which builds loops' control across devices) and the executor (which runs
// each frame's iterations) both start from it.
//
//   ASSIGN_OR_RETURN(ControlFlowFrames frames, FindControlFlowFrames(graph));
//   const std::string& frame = frames.input_frame[node->id()];   // "" is the root
//
// InvalidArgument naming the node for an Exit outside every loop, a frame entered from two
// frames, or a node whose inputs come from two frames. Pure; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tessera {

struct ControlFlowFrames {
  // By node id: the frame a node's inputs arrive in, and the one its outputs leave in (they
  // differ for Enter and Exit). Nodes no root reaches stay in the root.
  std::vector<std::string> input_frame;
  std::vector<std::string> output_frame;
  // By frame name: the frame its Enters enter from.
  std::map<std::string, std::string> parent;
  // The nodes the walk reached, from the roots: an order in which every node comes after
  // the first of its inputs.
  std::vector<const Node*> order;
};

StatusOr<ControlFlowFrames> FindControlFlowFrames(const Graph& graph);

// A while loop's Switch, on its LoopCond, rather than a cond's.
bool IsLoopSwitch(const Node& n);

}  // namespace tessera
