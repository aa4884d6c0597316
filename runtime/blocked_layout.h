// Chains of convolutions kept in oneDNN's blocked layout, as ONNX Runtime's NCHWc
// transformer keeps them: on a CPU, oneDNN's convolutions read and write [N, C/B, H, W, B]
// (B channels of a pixel together; B = 16 where the CPU has AVX-512, else 8) faster than
// NHWC, so a float NHWC Conv2D or DepthwiseConv2dNative (fused or not) whose filter is a
// constant becomes a _BlockedConv2D (a full one of fewer input channels than a block, a first
// layer's, reads its NHWC input as it is), and what reads its result in place keeps it
// blocked. Channels that are not whole blocks (MobileNetV2's 24, EfficientNet's 40 and 112
// in blocks of 16) are padded to whole blocks, as ONNX Runtime's NCHWc transformer pads a
// full convolution's outputs (depthwise ones here too): the filter and bias with zeros, so
// that a convolution writes zeros in the padding and its zero weights ignore whatever the
// ops between make of it there. Ops that run blocked:
// - unary activations;
// - binary arithmetic between blocked tensors of the same channels, or with a per-channel or
//   scalar constant (blocked too; a BiasAdd becomes an AddV2), or with another 4-D tensor of
//   the same channels, which enters the layout (a squeeze-and-excitation's [N, 1, 1, C]
//   scale); a _FusedScaleOffset's scale and offset are blocked;
// - ConcatV2 along the channels of whole blocks; MaxPool and AvgPool (_BlockedPool); Pad of
//   rows and columns;
// - Mean over rows and columns (one that drops them is taken blocked, then reshaped to
//   [N, C], which is the same memory where there is no padding).
// RealDiv of padded tensors does not (0 / 0 in the padding would be a NaN that zero weights
// keep).
// A _ToBlocked enters a chain and a _FromBlocked leaves it wherever anything else (a fetch
// included) reads a blocked result. A convolution that would enter the layout and lead to no
// other blocked convolution stays as it is: two reorders would cost what it gains. Training
// graphs are untouched (their filters are variables, not constants).
//
// Every node keeps its name, but for a residual connection's sum: a convolution with its
// bias whose result alone an Add reads, with another blocked tensor of its shape, adds that
// summand as it writes (and applies the Relu that alone reads the sum), taking the name of
// the last node it absorbs.
//
//   ASSIGN_OR_RETURN(step_graph, UseBlockedLayout(std::move(step_graph)));
//
// Runs on each step graph after the remapper, under the same switch
// (graph_options.rewrite_options.remapping). Pure function; thread-safe.
#pragma once

#include <memory>

#include "graph/graph.h"

namespace tessera {

// `graph`'s nodes must have assigned devices. Returns `graph` itself when nothing changes.
// `block` 0 picks the CPU's (16 with AVX-512, else 8).
StatusOr<std::unique_ptr<Graph>> UseBlockedLayout(std::unique_ptr<Graph> graph, int64_t block = 0);

}  // namespace tessera
