#include "devices/cpu/first_layer_conv.h"

#include <algorithm>
#include <array>
#include <utility>

#include "devices/cpu/block_vectors.h"
#include "devices/cpu/pointwise_conv.h"  // PairPanels

namespace tessera::cpu {
namespace {

// Pixels a run holds: with two output blocks a pixel, as pointwise_conv.cc's tiles.
template <int kBlock>
constexpr int kRunPixels =
#ifdef __AVX512F__
    12;
#else
    kBlock == 8 ? 6 : 3;
#endif

// The window's taps in the filter's [KH, KW, C] order: each one's row and column within
// the window and its offset in floats from the window's first cell in an NHWC image.
struct Taps {
  explicit Taps(const Geometry& g) : count(g.kh * g.kw * g.c) {
    int64_t t = 0;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        for (int64_t ci = 0; ci < g.c; ++ci, ++t) dy[t] = ky, dx[t] = kx, offset[t] = (ky * g.w + kx) * g.c + ci;
      }
    }
  }
  int64_t count;
  std::array<int64_t, kFirstLayerTaps> dy, dx, offset;
};

// What a run of pixels reads and writes: `image` [H, W, C]; `out` the output row's first
// pixel of the pair's first block, blocks `out_plane` floats apart.
struct RunArgs {
  const Geometry* g;
  const Taps* taps;
  const float* image;
  const float* panel;  // the pair's [taps, NV * B]
  const float* bias;   // the pair's, or none
  const ConvEpilogue* epilogue;
  float* out;
  int64_t out_plane;
  int64_t oy;
};

// R output pixels from column ox times NV output blocks. kEdge: the window may hang over the
// image, each tap checked; else it lies inside.
template <int kBlock, int R, int NV, bool kEdge>
void PixelRun(const RunArgs& a, int64_t ox) {
  using V = typename BlockOf<kBlock>::Floats;
  const Geometry& g = *a.g;
  const bool sum = a.epilogue->sum, clamp_low = a.epilogue->relu || a.epilogue->relu6,
             clamp_high = a.epilogue->relu6;
  V acc[R][NV];
#pragma GCC unroll 2
  for (int j = 0; j < NV; ++j) {
    const V b = a.bias != nullptr ? LoadBlock<V>(a.bias + j * kBlock) : V{};
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) acc[r][j] = sum ? b + LoadBlock<V>(a.out + j * a.out_plane + (ox + r) * kBlock) : b;
  }
  const int64_t iy = a.oy * g.sh - g.pad_top, ix = ox * g.sw - g.pad_left, step = g.sw * g.c;
  for (int64_t t = 0; t < a.taps->count; ++t) {
    V f[NV];
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) f[j] = LoadBlock<V>(a.panel + (t * NV + j) * kBlock);
    if (kEdge) {  // R is 1 here
      const int64_t y = iy + a.taps->dy[t], col = ix + a.taps->dx[t];
      if (y < 0 || y >= g.h || col < 0 || col >= g.w) continue;
    }
    const float* x = a.image + (iy * g.w + ix) * g.c + a.taps->offset[t];
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const V v = Broadcast<V>(x[r * step]);
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) acc[r][j] += v * f[j];
    }
  }
#pragma GCC unroll 2
  for (int j = 0; j < NV; ++j) {
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      StoreBlock(Activated(acc[r][j], clamp_low, clamp_high), a.out + j * a.out_plane + (ox + r) * kBlock);
    }
  }
}

template <int kBlock, int R>
void InnerRun(const RunArgs& a, int64_t ox, bool two) {
  two ? PixelRun<kBlock, R, 2, false>(a, ox) : PixelRun<kBlock, R, 1, false>(a, ox);
}

template <int kBlock, int... kRows>
constexpr auto InnerRunsByPixels(std::integer_sequence<int, kRows...>) {
  return std::array{&InnerRun<kBlock, kRows + 1>...};
}

// InnerRun<kBlock, pixels> for 1..R pixels, at index pixels - 1.
template <int kBlock>
constexpr auto kInnerRuns = InnerRunsByPixels<kBlock>(std::make_integer_sequence<int, kRunPixels<kBlock>>{});

// One output row, every pair of output blocks in turn.
template <int kBlock>
void Row(const Geometry& g, const Taps& taps, int64_t o, const float* image, const float* panels,
         const ConvEpilogue& epilogue, int64_t oy, float* out_image) {
  constexpr int R = kRunPixels<kBlock>;
  const int64_t blocks = o / kBlock, plane = g.oh * g.ow * kBlock;
  // Columns whose window lies inside the image's, on a row whose window does too.
  const int64_t iy = oy * g.sh - g.pad_top;
  const bool inner_row = iy >= 0 && iy + g.kh <= g.h;
  int64_t first = std::min(g.ow, (g.pad_left + g.sw - 1) / g.sw);
  int64_t last = g.w + g.pad_left >= g.kw ? std::min(g.ow, (g.w + g.pad_left - g.kw) / g.sw + 1) : 0;
  if (!inner_row || last < first) first = last = 0;
  const int64_t runs = (last - first + R - 1) / R;
  for (int64_t b = 0; b < blocks; b += 2) {
    const bool two = b + 1 < blocks;
    const RunArgs a{&g,
                    &taps,
                    image,
                    panels + b * kBlock * taps.count,
                    epilogue.bias != nullptr ? epilogue.bias + b * kBlock : nullptr,
                    &epilogue,
                    out_image + b * plane + oy * g.ow * kBlock,
                    plane,
                    oy};
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      if (ox >= first && ox < last) continue;
      two ? PixelRun<kBlock, 1, 2, true>(a, ox) : PixelRun<kBlock, 1, 1, true>(a, ox);
    }
    // Runs of as even a size as R allows.
    for (int64_t run = 0; run < runs; ++run) {
      const int64_t from = first + run * (last - first) / runs, to = first + (run + 1) * (last - first) / runs;
      kInnerRuns<kBlock>[to - from - 1](a, from, two);
    }
  }
}

template <int kBlock>
void Run(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* in, const float* panels, float* out,
         const ConvEpilogue& epilogue) {
  const Taps taps(g);
  ctx->ParallelFor(g.oh, g.ow * taps.count * o / kBlock, [&](int64_t begin, int64_t end) {
    for (int64_t oy = begin; oy < end; ++oy) Row<kBlock>(g, taps, o, in, panels, epilogue, oy, out);
  });
}

}  // namespace

bool FirstLayerSuits(const Geometry& g, const ConvEpilogue& epilogue) {
  const int64_t taps = g.kh * g.kw * g.c;
  return g.n == 1 && taps > 0 && taps <= kFirstLayerTaps && epilogue.max_pool == nullptr;
}

Status FirstLayerConv2D(OpKernelContext* ctx, const Geometry& g, int64_t o, int64_t block, const float* in,
                        const float* filter, float* out, const ConvEpilogue& epilogue, TransformedFilter* packed) {
  ASSIGN_OR_RETURN(const Tensor panels, PairPanels(ctx, filter, g.kh * g.kw * g.c, o, block, packed));
  if (block == 16) {
    Run<16>(ctx, g, o, in, panels.data<float>(), out, epilogue);
  } else {
    Run<8>(ctx, g, o, in, panels.data<float>(), out, epilogue);
  }
  return ctx->status();
}

}  // namespace tessera::cpu
