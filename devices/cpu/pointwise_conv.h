#pragma once
// 1x1 convolutions at stride 1 in the blocked layout (runtime/blocked_layout.h), computed
// by our own register-tiled loop: a tile of pixels times a pair of output blocks, the
// input's channels summed in registers, the epilogue applied as the tile is stored.
//
// oneDNN's blocked kernels cut a single image only by whole output blocks, so at batch 1 a
// layer of few blocks (MobileNetV2's 16-channel projection: one block of 16) ran on one
// thread however many there were; this loop cuts an image by its pixels as well (that
// projection at 112x112 on two threads: 125 -> 73 us). On one thread it runs level with
// oneDNN's kernel: MobileNetV2 at batch 1 1.3% faster on one thread, 3.8% on two (medians
// of 10 paired runs on an AVX-512 host).
//
// Thread safety: BlockedPointwiseConv2D may run concurrently.

#include <cstdint>

#include "devices/cpu/conv_epilogue.h"
#include "devices/cpu/transformed_filter.h"
#include "kernels/op_kernel.h"
#include "kernels/util/conv_geometry.h"

namespace tessera::cpu {

// A filter [ROWS, O] (a 1x1 filter's [C, O]; any filter's [KH * KW * C, O]) as a panel
// [ROWS, 2 * B] for each pair of output blocks (the last one [ROWS, B] where the blocks
// are odd), which a tile reads straight through; in place of the filter's columns, 4 * O
// bytes apart, whose lines did not stay in cache. Kept in `packed` where the caller has one
// (a constant filter), else made on each call.
StatusOr<Tensor> PairPanels(OpKernelContext* ctx, const float* filter, int64_t rows, int64_t o, int64_t block,
                            TransformedFilter* packed);

// Whether BlockedPointwiseConv2D takes `g`: a full 1x1 convolution at stride 1 without
// padding, of a single image of more than one pixel (one pixel is RowTimesFilter's),
// writing no max pool. A batch stays with oneDNN, cut by images: this loop ran
// MobileNetV2 and EfficientNetB0 at batch 32 5-9% slower.
bool PointwiseSuits(const Geometry& g, int64_t depthwise, const ConvEpilogue& epilogue);

// out [1, O / B, H, W, B] = conv(in [1, C / B, H, W, B], filter [1, 1, C, O]) with the
// epilogue's summand (already in `out`), bias and activation; C and O whole blocks of
// `block` (8 or 16). Runs on the intra-op threads, cut by pixels and output blocks.
// The filter is repacked once into `packed` where the caller keeps one (a constant
// filter), else on each call.
Status BlockedPointwiseConv2D(OpKernelContext* ctx, const Geometry& g, int64_t o, int64_t block, const float* in,
                              const float* filter, float* out, const ConvEpilogue& epilogue,
                              TransformedFilter* packed);

}  // namespace tessera::cpu
