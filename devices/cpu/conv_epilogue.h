#pragma once
// What a forward convolution does to its output as it writes it, shared by oneDNN's
// convolutions (dnnl_conv.h) and our own (winograd_conv.h).

#include <cstdint>

#include "kernels/util/conv_geometry.h"

namespace tessera::cpu {

// What a forward convolution applies as it writes its output (a fused BiasAdd and Relu),
// and a MaxPool it feeds alone.
struct ConvEpilogue {
  const float* bias = nullptr;  // [O], or none
  bool relu = false;
  bool relu6 = false;  // min(max(x, 0), 6) instead; never with a max_pool
  // The pool's windows over the convolution's output [N, OH, OW, O], or none. The output is
  // then made a few images at a time into a buffer that stays in cache, and pooled from
  // there: the full-size result never goes out to memory and back.
  const Geometry* max_pool = nullptr;
  // With max_pool, where each pooled value's argmax goes ([N, PH, PW, O], pooling.h), for
  // the gradient; or none.
  uint8_t* argmax = nullptr;
  // The output already holds a summand, which the convolution adds to before the
  // activation (a residual connection's); blocked convolutions only.
  bool sum = false;
};

}  // namespace tessera::cpu
