// A zero Pad before a VALID convolution folded into the convolution as SAME padding, where
// the two read the same windows: Keras pads a strided convolution's input by hand
// (ZeroPadding2D with its correct_pad) exactly as TensorFlow's SAME rule would, which costs
// a copy of the activation that the convolution's own padding does not. The Pad must pad
// only rows and columns, with zeros, by constants; the Conv2D or DepthwiseConv2dNative must
// be the Pad's one reader, and the padded input's rows and columns known. The convolution
// keeps its name and reads the Pad's input.
//
//   ASSIGN_OR_RETURN(step_graph, FoldPadsIntoConvolutions(std::move(step_graph)));
//
// Runs on each step graph after constant folding, with the remapper's fusions;
// graph_options.rewrite_options.remapping = "OFF" turns it off. Pure function; thread-safe.
#pragma once

#include <memory>

#include "graph/graph.h"

namespace tessera {

// Returns `graph` itself when nothing folds.
StatusOr<std::unique_ptr<Graph>> FoldPadsIntoConvolutions(std::unique_ptr<Graph> graph);

}  // namespace tessera
