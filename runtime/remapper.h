// The remapper, TensorFlow's grappler pass of that name in small: in a placed step graph, a
// float32 NHWC Conv2D (or a MatMul) whose one consumer is a BiasAdd (whose one consumer may be
// a Relu, or for a Conv2D on a CPU a Relu6), all on one CPU or GPU device, becomes a single
// _FusedConv2D (_FusedMatMul) named as the last node it replaces, so consumers and fetches
// find it unchanged; on a CPU a DepthwiseConv2dNative, its BiasAdd and a Relu or Relu6 become
// a _FusedDepthwiseConv2dNative the same way. The bias and activation are then applied as
// each block of the output is written (no second and third pass over the
// tensor). A node that anything else
// reads, a fetch, or a dilated or NCHW convolution stays as it is. Gradients are untouched:
// they read the Relu's output, which the fused node produces. A MaxPool that alone reads
// the chain's result on a CPU joins it as _FusedConv2DMaxPool: the convolution's output is
// then made a few images at a time and pooled while still in cache. In training, where the
// chain's result is read by its MaxPool, that pool's MaxPoolGrad and the ReluGrad of the
// MaxPoolGrad's result alone, the pool keeps each window's argmax
// (_FusedConv2DMaxPoolWithArgmax) and one _FusedConv2DMaxPoolGrad, named as the ReluGrad,
// computes the gradient from it: the full-size output is neither stored nor read back. The
// BiasAddGrad of that gradient becomes an Identity of the bias gradient the node sums from
// the pooled gradient. Where only a Conv2DBackpropFilter (and that BiasAddGrad) reads the
// gradient, as in a first layer, one _FusedConv2DMaxPoolBackpropFilter named as the
// Conv2DBackpropFilter makes both parameters' gradients from the pooled one. Apart from
// convolutions, on a CPU a Mul by a per-channel constant whose one reader adds a constant of
// the same shape (a frozen batch normalisation no convolution before it absorbed:
// scale_folding.h), with the Relu or Relu6 that alone reads the sum, becomes one
// _FusedScaleOffset: one pass over the tensor instead of three. And on a CPU a Sigmoid whose
// one reader multiplies it by the Sigmoid's input (swish) becomes one _Swish.
//
//   ASSIGN_OR_RETURN(step_graph, Remap(std::move(step_graph)));
//
// DirectSession and MasterSession run it on each step's graph after pruning, before
// partitioning; the config's graph_options.rewrite_options.remapping = "OFF" turns it off.
// Pure function; thread-safe.
#pragma once

#include <memory>

#include "graph/graph.h"

namespace tessera {

// `graph`'s nodes must have assigned devices. Returns `graph` itself when nothing fuses.
StatusOr<std::unique_ptr<Graph>> Remap(std::unique_ptr<Graph> graph);

}  // namespace tessera
