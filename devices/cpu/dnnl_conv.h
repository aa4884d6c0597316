// float32 NHWC convolutions through oneDNN (the library PyTorch and TensorFlow use for
// CPU convolutions): forward, and the gradients with respect to the input and the filter.
// Filters are [KH, KW, C, O] as in TensorFlow. The batch is cut into one part per thread of
// the intra-op pool, and each part runs single-threaded, so the engine's pools alone decide
// how many cores a step uses (oneDNN's own OpenMP threads would compete with them).
// Primitives are built once per shape and cached; every function may run concurrently.
#pragma once

#include <cstdint>

#include "kernels/op_kernel.h"
#include "kernels/util/conv_geometry.h"

namespace tessera::cpu {

// What a forward convolution applies as it writes its output (a fused BiasAdd and Relu),
// and a MaxPool it feeds alone.
struct ConvEpilogue {
  const float* bias = nullptr;  // [O], or none
  bool relu = false;
  // The pool's windows over the convolution's output [N, OH, OW, O], or none. The output is
  // then made a few images at a time into a buffer that stays in cache, and pooled from
  // there: the full-size result never goes out to memory and back.
  const Geometry* max_pool = nullptr;
  // With max_pool, where each pooled value's argmax goes ([N, PH, PW, O], pooling.h), for
  // the gradient; or none.
  uint8_t* argmax = nullptr;
};

// out [N, OH, OW, O] = conv(in [N, H, W, C], filter), then the epilogue; with a max_pool,
// out is the pooled [N, PH, PW, O].
Status DnnlConv2D(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* in, const float* filter, float* out,
                  const ConvEpilogue& epilogue = {});
// d_in [N, H, W, C] from d_out [N, OH, OW, O].
Status DnnlConv2DBackpropInput(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* filter,
                               const float* d_out, float* d_in);
// d_filter [KH, KW, C, O] from the input and d_out.
Status DnnlConv2DBackpropFilter(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* in,
                                const float* d_out, float* d_filter);

}  // namespace tessera::cpu
