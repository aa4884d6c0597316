// Affine normalisations folded into the convolution or matrix product before them, as
// TensorFlow's grappler folds batch normalisation for inference and ONNX converters do ahead
// of time. Where a float Conv2D, DepthwiseConv2dNative or MatMul whose filter is a constant is
// read only by a Mul by a constant of one value per output channel, the filter is scaled
// instead and the Mul goes; where what is left is read only by an Add or AddV2 of such a
// constant, that becomes a BiasAdd, which the remapper then fuses into the convolution with
// the activation after it. A convolution's FusedBatchNorm (any version) with constant given
// statistics, whose y alone is read, is that scale and offset. The pattern is what a frozen Keras model holds (its
// BatchNormalization exports as x * scale + offset, and a loaded SavedModel is frozen:
// saved_model/saved_model.h); the node that takes the chain's place keeps the last one's
// name, so consumers and fetches find it unchanged.
//
//   ASSIGN_OR_RETURN(step_graph, FoldScalesIntoFilters(std::move(step_graph)));
//
// Runs on each step graph after constant folding (the scale and offset are constants only
// then), before the remapper; graph_options.rewrite_options.remapping = "OFF" turns both off.
// Pure function; thread-safe.
#pragma once

#include <memory>

#include "graph/graph.h"

namespace tessera {

// `graph`'s nodes must have assigned devices. Returns `graph` itself when nothing folds.
StatusOr<std::unique_ptr<Graph>> FoldScalesIntoFilters(std::unique_ptr<Graph> graph);

}  // namespace tessera
