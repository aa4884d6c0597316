// float32 NHWC convolutions through oneDNN (the library PyTorch and TensorFlow use for
// CPU convolutions): forward (full and depthwise), and the gradients with respect to the
// input and the filter (of both).
// Filters are [KH, KW, C, O] as in TensorFlow. The batch is cut into one part per thread of
// the intra-op pool, and each part runs single-threaded, so the engine's pools alone decide
// how many cores a step uses (oneDNN's own OpenMP threads would compete with them).
// Primitives are built once per shape and cached; every function may run concurrently.
#pragma once

#include <cstdint>
#include <memory>

#include "devices/cpu/conv_epilogue.h"
#include "kernels/op_kernel.h"
#include "kernels/util/conv_geometry.h"

namespace tessera::cpu {

// A filter that never changes (a Const's) in the layouts oneDNN's primitives want it, each
// made on first use and kept: a kernel whose filter input is a constant holds one, so that a
// frozen model's filters are reordered once rather than on every call. Thread-safe.
class PackedFilter {
 public:
  PackedFilter();
  ~PackedFilter();
  PackedFilter(const PackedFilter&) = delete;
  PackedFilter& operator=(const PackedFilter&) = delete;

  struct Layouts;  // dnnl_conv.cc's
  Layouts& layouts() { return *layouts_; }

 private:
  std::unique_ptr<Layouts> layouts_;
};

// out [N, OH, OW, O] = conv(in [N, H, W, C], filter), then the epilogue; with a max_pool,
// out is the pooled [N, PH, PW, O]. With `packed`, `filter` must be the same every call.
Status DnnlConv2D(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* in, const float* filter, float* out,
                  const ConvEpilogue& epilogue = {}, PackedFilter* packed = nullptr);
// out [N, OH, OW, C * multiplier] = DepthwiseConv2dNative(in [N, H, W, C], filter
// [KH, KW, C, multiplier]).
// The epilogue's bias and activation apply; it has no max_pool.
Status DnnlDepthwiseConv2D(OpKernelContext* ctx, const Geometry& g, int64_t multiplier, const float* in,
                           const float* filter, float* out, const ConvEpilogue& epilogue = {},
                           PackedFilter* packed = nullptr);
// The forward convolution over activations in oneDNN's blocked layout of `block` (8 or 16)
// channels (runtime/blocked_layout.h): in [N, C / block, H, W, block], out [N, O / block, OH,
// OW, block], C and O whole blocks; `g` is the NHWC geometry. A full convolution for
// `depthwise` 0, else a depthwise one of that multiplier (O = C * depthwise). The epilogue's
// bias, sum and activation apply; it has no max_pool.
Status DnnlBlockedConv2D(OpKernelContext* ctx, const Geometry& g, int64_t o, int64_t depthwise, int64_t block,
                         const float* in, const float* filter, float* out, const ConvEpilogue& epilogue = {},
                         PackedFilter* packed = nullptr);
// The same full convolution from an NHWC input of any channels (a first layer's few, which
// are not whole blocks) to a blocked output: `in` [N, H, W, C], out [N, O / block, OH, OW,
// block].
Status DnnlBlockedConv2DFromNhwc(OpKernelContext* ctx, const Geometry& g, int64_t o, int64_t block, const float* in,
                                 const float* filter, float* out, const ConvEpilogue& epilogue = {},
                                 PackedFilter* packed = nullptr);
// d_in [N, H, W, C] from d_out [N, OH, OW, O].
Status DnnlConv2DBackpropInput(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* filter,
                               const float* d_out, float* d_in);
// d_filter [KH, KW, C, O] from the input and d_out.
Status DnnlConv2DBackpropFilter(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* in,
                                const float* d_out, float* d_filter);

// DepthwiseConv2dNative's gradients: d_in [N, H, W, C] from d_out [N, OH, OW, C * multiplier],
// and d_filter [KH, KW, C, multiplier] from the input and d_out.
Status DnnlDepthwiseConv2DBackpropInput(OpKernelContext* ctx, const Geometry& g, int64_t multiplier,
                                        const float* filter, const float* d_out, float* d_in);
Status DnnlDepthwiseConv2DBackpropFilter(OpKernelContext* ctx, const Geometry& g, int64_t multiplier,
                                         const float* in, const float* d_out, float* d_filter);

}  // namespace tessera::cpu
