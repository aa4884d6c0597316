// float32 NHWC convolutions whose window holds few input values (KH * KW * C up to
// kSmallConvTaps: an image network's first layer, 3x3 or 5x5 over one or three channels),
// fused with the max pool after them, forward and for the filter's gradient. oneDNN blocks
// input channels by 8 or 16 and leaves most of its lanes empty on such a convolution (the
// demo CNN's first layer at batch 128, one thread: 0.9 ms for the convolution alone, 1.5 ms
// with its pool and argmax); computed directly, 16 output channels at a time with the
// window's taps and the filter in vector registers, and the convolution's output pooled as
// it is made, it takes 0.87 ms in the training step. Its gradient never exists in memory either: the filter's
// gradient is summed from the pooled gradient and the argmax.
//
// Each function covers a run of images on the calling thread; callers cut the batch into
// parts (batch_parts.h). Pure functions of their arguments: any may run concurrently.
#pragma once

#include <cstdint>

#include "kernels/util/conv_geometry.h"

namespace tessera::cpu {

constexpr int64_t kSmallConvTaps = 27;

// Whether the functions below take a convolution of `conv`'s geometry and `o` filters:
// at most kSmallConvTaps taps and whole blocks of 16 filters.
bool SmallConvApplies(const Geometry& conv, int64_t o);

// Images [first, last) of conv(in [N, H, W, C], filter [KH, KW, C, O]) + bias, after a ReLU
// where `relu`, max-pooled by `pool`'s windows over the convolution's output into `out`
// [N, PH, PW, O], with each value's argmax (pooling.h) where `argmax` is not null: what
// DnnlConv2D with a max_pool epilogue makes.
void SmallConvMaxPool(const Geometry& conv, const Geometry& pool, int64_t o, const float* in, const float* filter,
                      const float* bias, bool relu, int64_t first, int64_t last, float* out, uint8_t* argmax);

// Adds onto `d_filter` [KH, KW, C, O] and `d_bias` [O] the gradients of images [first, last)
// from the pooled gradient `grad` and `argmax` [N, PH, PW, O]: the filter gradient of the
// convolution output's gradient that MaxPoolGradFromArgmax makes, and its sum over all but
// the channels.
void SmallConvMaxPoolBackpropFilter(const Geometry& conv, const Geometry& pool, int64_t o, const float* in,
                                    const float* grad, const uint8_t* argmax, int64_t first, int64_t last,
                                    float* d_filter, float* d_bias);

}  // namespace tessera::cpu
