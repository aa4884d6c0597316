#pragma once
// Winograd's minimal filtering F(4x4, 3x3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016) for 3x3 stride-1 convolutions in the blocked layout
// (runtime/blocked_layout.h). A 6x6 patch of input and the filter, each transformed, make a
// 4x4 tile of output from 36 products per channel pair where the direct convolution takes
// 144 multiply-adds: a layer becomes a transform of its input, 36 matrix products and a
// transform back. oneDNN 2.6 has Winograd only where AVX-512 is; on this AVX2 machine
// ResNet50's 3x3 layers ran 1.5-2.7x faster this way than oneDNN's direct kernels.
//
// Results differ from a direct convolution's by rounding relative to the magnitude of the
// terms summed (the sum of |x| |w| over a window): ~1e-6 of it measured, against ~1e-7 for
// the direct one, so an output where large terms cancel has a larger relative error.
//
// Thread safety: WinogradBlockedConv2D may run concurrently, with the same
// TransformedFilter or different ones.

#include "devices/cpu/conv_epilogue.h"
#include "devices/cpu/transformed_filter.h"
#include "kernels/op_kernel.h"
#include "kernels/util/conv_geometry.h"

namespace tessera::cpu {

// `filter` [3, 3, C, O] in the transformed domain, [36, O / 8, C, 8].
StatusOr<Tensor> WinogradFilter(TransformedFilter* transformed, const float* filter, int64_t c, int64_t o);

// Whether WinogradBlockedConv2D takes `g`: a 3x3 window at stride 1 over enough tiles of
// output that the transformed filter, 4x the filter's size, is worth reading (ResNet50's
// 7x7 layers at batch 1, four tiles, ran 0.8x oneDNN's speed).
bool WinogradSuits(const Geometry& g);

// DnnlBlockedConv2D's full convolution (the same layouts, and the epilogue's bias, sum and
// activation; no max_pool) by F(4x4, 3x3), the filter transformed once into `transformed`.
// C and O are whole blocks of `block` (8 or 16).
Status WinogradBlockedConv2D(OpKernelContext* ctx, const Geometry& g, int64_t o, int64_t block, const float* in,
                             const float* filter, float* out, const ConvEpilogue& epilogue,
                             TransformedFilter* transformed);

}  // namespace tessera::cpu
