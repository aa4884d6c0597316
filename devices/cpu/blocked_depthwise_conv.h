#pragma once
// Depthwise 3x3 and 5x5 convolutions in the blocked layout (runtime/blocked_layout.h),
// computed by our own loop: a run of output pixels of one row and one block of channels in
// registers, the window's filter vectors beside them, the epilogue applied as the run is
// stored; the work cut by rows of blocks across the threads.
//
// oneDNN's kernel cut a single image only by blocks of channels (MobileNetV2's 144-channel
// layers, 9 blocks of 16, ran as 5 + 4 on two threads), and took longer on one thread as
// well: MobileNetV2's depthwise layers at batch 1 took 1272 us on one thread and 814 on two,
// 953 and 588 so (AVX-512 host); the model 3.9% and 8.6% faster, 2.5% and 0.8% at batch 32
// (paired medians), EfficientNetB0 1.1% and 5.1% at batch 1, level at batch 32.
//
// Thread safety: BlockedDepthwiseConv2D may run concurrently.

#include <cstdint>

#include "devices/cpu/conv_epilogue.h"
#include "kernels/op_kernel.h"
#include "kernels/util/conv_geometry.h"

namespace tessera::cpu {

// Whether BlockedDepthwiseConv2D takes `g` with a depthwise multiplier of `depthwise`: a
// multiplier of 1, a 3x3 or 5x5 window at stride 1 or 2, no max pool.
bool BlockedDepthwiseSuits(const Geometry& g, int64_t depthwise, const ConvEpilogue& epilogue);

// out [N, C / B, OH, OW, B] = depthwise_conv(in [N, C / B, H, W, B], filter [KH, KW, C, 1])
// with the epilogue's summand (already in `out`), bias and activation; C whole blocks of
// `block` (8 or 16). Runs on the intra-op threads, cut by images, blocks and rows.
void BlockedDepthwiseConv2D(OpKernelContext* ctx, const Geometry& g, int64_t block, const float* in,
                            const float* filter, float* out, const ConvEpilogue& epilogue);

}  // namespace tessera::cpu
