#pragma once
// A network's first convolution of a single NHWC image of few channels into the blocked
// layout (runtime/blocked_layout.h), computed by our own register-tiled loop: a run of
// output pixels of one row times a pair of output blocks, summed over the window's taps
// (KH * KW * C of them, each pixel's value broadcast against the pair's filter vectors),
// the epilogue applied as the run is stored; the work cut by output rows across the
// threads.
//
// oneDNN's blocked first layer reads an NCHW copy of the image and cuts a single image by
// output blocks only (MobileNetV2's 32 channels: two blocks, one a thread). MobileNetV2's
// first layer at batch 1 (AVX-512 host): 325 -> 292 us on one thread, 236 -> 193 on two;
// EfficientNetB0's 315 -> 251 and 215 -> 140; MobileNetV2 1.5% faster on two threads
// (paired medians of 20), level on one. A batch stays with oneDNN, which cuts it by images
// (MobileNetV2 at batch 32 was 1-3% slower this way).
//
// Thread safety: FirstLayerConv2D may run concurrently.

#include <cstdint>

#include "devices/cpu/conv_epilogue.h"
#include "devices/cpu/transformed_filter.h"
#include "kernels/op_kernel.h"
#include "kernels/util/conv_geometry.h"

namespace tessera::cpu {

// The most taps (KH * KW * C) FirstLayerConv2D takes: a 3x3 or 5x5 window over three
// channels, whose run of pixels reads all its taps from cache.
constexpr int64_t kFirstLayerTaps = 75;

// Whether FirstLayerConv2D takes `g`: a single image, at most kFirstLayerTaps taps, no max
// pool.
bool FirstLayerSuits(const Geometry& g, const ConvEpilogue& epilogue);

// out [1, O / B, OH, OW, B] = conv(in [1, H, W, C], filter [KH, KW, C, O]) with the
// epilogue's summand (already in `out`), bias and activation; O whole blocks of `block`
// (8 or 16). The filter is repacked once into `packed` where the caller keeps one (a
// constant filter), else on each call.
Status FirstLayerConv2D(OpKernelContext* ctx, const Geometry& g, int64_t o, int64_t block, const float* in,
                        const float* filter, float* out, const ConvEpilogue& epilogue, TransformedFilter* packed);

}  // namespace tessera::cpu
