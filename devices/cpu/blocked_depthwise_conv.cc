#include "devices/cpu/blocked_depthwise_conv.h"

#include <algorithm>

#include "devices/cpu/block_vectors.h"

namespace tessera::cpu {
namespace {

// Output pixels a run holds in registers beside the window's K * K filter vectors: 9 + 8
// or 25 + 4 of AVX-512's 32; with AVX2's 16, a 5x5 window's filter is read from cache.
template <int K>
constexpr int kRunPixels =
#ifdef __AVX512F__
    K == 3 ? 8 : 4;
#else
    4;
#endif

// One row of one block of the output: `plane` is the block's input [H, W, B], `out_row`
// the row's [OW, B].
template <int kBlock, int K>
class RowOfBlock {
 public:
  using V = typename BlockOf<kBlock>::Floats;

  RowOfBlock(const Geometry& g, const float* filter, const float* bias, const ConvEpilogue& epilogue)
      : g_(g),
        bias_(bias != nullptr ? LoadBlock<V>(bias) : V{}),
        sum_(epilogue.sum),
        clamp_low_(epilogue.relu || epilogue.relu6),
        clamp_high_(epilogue.relu6) {
    for (int t = 0; t < K * K; ++t) w_[t] = LoadBlock<V>(filter + t * g.c);
    // Output columns whose window lies inside the input's columns.
    first_inner_ = std::min(g.ow, (g.pad_left + g.sw - 1) / g.sw);
    last_inner_ = g.w + g.pad_left >= K ? std::min(g.ow, (g.w + g.pad_left - K) / g.sw + 1) : 0;
    last_inner_ = std::max(last_inner_, first_inner_);
  }

  void Run(const float* plane, int64_t oy, float* out_row) const {
    const int64_t iy = oy * g_.sh - g_.pad_top;
    const int ky0 = static_cast<int>(std::max<int64_t>(0, -iy)), ky1 = static_cast<int>(std::min<int64_t>(K, g_.h - iy));
    const float* top = plane + iy * g_.w * kBlock;  // the window's first row, maybe outside
    for (int64_t ox = 0; ox < first_inner_; ++ox) Pixels<1, true>(top, ky0, ky1, ox, out_row);
    constexpr int P = kRunPixels<K>;
    int64_t ox = first_inner_;
    for (; ox + P <= last_inner_; ox += P) Pixels<P, false>(top, ky0, ky1, ox, out_row);
    for (; ox < last_inner_; ++ox) Pixels<1, false>(top, ky0, ky1, ox, out_row);
    for (ox = last_inner_; ox < g_.ow; ++ox) Pixels<1, true>(top, ky0, ky1, ox, out_row);
  }

 private:
  // P output pixels from `ox`; with kEdge, each tap's column checked against the input's.
  template <int P, bool kEdge>
  void Pixels(const float* top, int ky0, int ky1, int64_t ox, float* out_row) const {
    V acc[P];
    for (int p = 0; p < P; ++p) acc[p] = sum_ ? bias_ + LoadBlock<V>(out_row + (ox + p) * kBlock) : bias_;
    const int64_t ix = ox * g_.sw - g_.pad_left;
#pragma GCC unroll 5
    for (int ky = 0; ky < K; ++ky) {
      if (ky < ky0 || ky >= ky1) continue;
      const float* row = top + ky * g_.w * kBlock;
#pragma GCC unroll 5
      for (int kx = 0; kx < K; ++kx) {
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) {
          const int64_t x = ix + p * g_.sw + kx;
          if (kEdge && (x < 0 || x >= g_.w)) continue;
          acc[p] += LoadBlock<V>(row + x * kBlock) * w_[ky * K + kx];
        }
      }
    }
    for (int p = 0; p < P; ++p) StoreBlock(Activated(acc[p], clamp_low_, clamp_high_), out_row + (ox + p) * kBlock);
  }

  const Geometry& g_;
  V w_[K * K];
  const V bias_;
  const bool sum_, clamp_low_, clamp_high_;
  int64_t first_inner_ = 0, last_inner_ = 0;
};

template <int kBlock, int K>
void Run(OpKernelContext* ctx, const Geometry& g, const float* in, const float* filter, float* out,
         const ConvEpilogue& epilogue) {
  const int64_t blocks = g.c / kBlock, in_plane = g.h * g.w * kBlock, out_plane = g.oh * g.ow * kBlock;
  // Units are rows of the planes [N, C / B] of the output, a plane's rows together: a
  // thread's range holds few planes, whose filter it loads once.
  ctx->ParallelFor(g.n * blocks * g.oh, g.ow * K * K, [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end;) {
      const int64_t plane = unit / g.oh, block = plane % blocks, last = std::min(end, (plane + 1) * g.oh);
      const float* bias = epilogue.bias != nullptr ? epilogue.bias + block * kBlock : nullptr;
      const RowOfBlock<kBlock, K> rows(g, filter + block * kBlock, bias, epilogue);
      for (; unit < last; ++unit) {
        const int64_t oy = unit % g.oh;
        rows.Run(in + plane * in_plane, oy, out + plane * out_plane + oy * g.ow * kBlock);
      }
    }
  });
}

}  // namespace

bool BlockedDepthwiseSuits(const Geometry& g, int64_t depthwise, const ConvEpilogue& epilogue) {
  return depthwise == 1 && g.kh == g.kw && (g.kh == 3 || g.kh == 5) && g.sh == g.sw &&
         (g.sh == 1 || g.sh == 2) && epilogue.max_pool == nullptr;
}

void BlockedDepthwiseConv2D(OpKernelContext* ctx, const Geometry& g, int64_t block, const float* in,
                            const float* filter, float* out, const ConvEpilogue& epilogue) {
  if (block == 16) {
    g.kh == 3 ? Run<16, 3>(ctx, g, in, filter, out, epilogue) : Run<16, 5>(ctx, g, in, filter, out, epilogue);
  } else {
    g.kh == 3 ? Run<8, 3>(ctx, g, in, filter, out, epilogue) : Run<8, 5>(ctx, g, in, filter, out, epilogue);
  }
}

}  // namespace tessera::cpu
