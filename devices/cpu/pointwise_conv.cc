#include "devices/cpu/pointwise_conv.h"

#include <algorithm>
#include <array>
#include <utility>

#include "devices/cpu/block_vectors.h"

namespace tessera::cpu {
namespace {

// Pixels a tile holds: with two output blocks a pixel, the accumulators take 24 of
// AVX-512's 32 vector registers, 12 of AVX2's 16 (a block of 16 is two AVX2 registers).
template <int kBlock>
constexpr int kTileRows =
#ifdef __AVX512F__
    12;
#else
    kBlock == 8 ? 6 : 3;
#endif

// R pixels times NV output blocks: `in` is the first pixel of the first input block (the
// input's blocks `in_plane` floats apart), `panel` the blocks' filter [C, NV * kBlock],
// `out` the first pixel of the first output block (blocks `out_plane` floats apart).
template <int kBlock, int R, int NV>
void Tile(const float* in, int64_t in_plane, int64_t in_blocks, const float* panel, const float* bias,
          const ConvEpilogue& epilogue, float* out, int64_t out_plane) {
  using V = typename BlockOf<kBlock>::Floats;
  // Locals: the stores below may alias the epilogue as far as the compiler knows.
  const bool sum = epilogue.sum, clamp_low = epilogue.relu || epilogue.relu6, clamp_high = epilogue.relu6;
  // The loops over r and j unrolled keep acc in registers (GCC 12 left a loop of 12 over
  // an array on the stack).
  V acc[R][NV];
#pragma GCC unroll 2
  for (int j = 0; j < NV; ++j) {
    const V b = bias != nullptr ? LoadBlock<V>(bias + j * kBlock) : V{};
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) acc[r][j] = sum ? b + LoadBlock<V>(out + j * out_plane + r * kBlock) : b;
  }
  for (int64_t ib = 0; ib < in_blocks; ++ib) {
    const float* x = in + ib * in_plane;
    const float* w = panel + ib * kBlock * NV * kBlock;
    for (int c = 0; c < kBlock; ++c) {
      V f[NV];
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) f[j] = LoadBlock<V>(w + (c * NV + j) * kBlock);
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        const V a = Broadcast<V>(x[r * kBlock + c]);
#pragma GCC unroll 2
        for (int j = 0; j < NV; ++j) acc[r][j] += a * f[j];
      }
    }
  }
#pragma GCC unroll 2
  for (int j = 0; j < NV; ++j) {
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      StoreBlock(Activated(acc[r][j], clamp_low, clamp_high), out + j * out_plane + r * kBlock);
    }
  }
}

template <int kBlock, int R>
void PairTile(const float* in, int64_t in_plane, int64_t in_blocks, const float* panel, const float* bias,
              const ConvEpilogue& epilogue, float* out, int64_t out_plane, bool two) {
  if (two) {
    Tile<kBlock, R, 2>(in, in_plane, in_blocks, panel, bias, epilogue, out, out_plane);
  } else {
    Tile<kBlock, R, 1>(in, in_plane, in_blocks, panel, bias, epilogue, out, out_plane);
  }
}

template <int kBlock, int... kRows>
constexpr auto PairTilesByRows(std::integer_sequence<int, kRows...>) {
  return std::array{&PairTile<kBlock, kRows + 1>...};
}

// PairTile<kBlock, rows> for rows 1..R, at index rows - 1.
template <int kBlock>
constexpr auto kPairTiles = PairTilesByRows<kBlock>(std::make_integer_sequence<int, kTileRows<kBlock>>{});

// Below this many multiply-adds a part of a tile is not worth a hop to another thread.
constexpr int64_t kMinPartMacs = 64 << 10;
// Units a thread has at least where an image has few tiles: parts of a few output blocks
// balance the threads (MobileNetV2's 7x7 layers on two threads, 5 tiles: 270 -> 210 us for
// the 1280-channel one with 16 units a thread instead of 4).
constexpr int64_t kUnitsPerThread = 16;

template <int kBlock>
void Run(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* in, const float* panels, float* out,
         const ConvEpilogue& epilogue) {
  constexpr int R = kTileRows<kBlock>;
  const int64_t pixels = g.h * g.w, blocks = o / kBlock, pairs = (blocks + 1) / 2, plane = pixels * kBlock;
  // Tiles of as even a size as R allows: a 7x7 image is 10 + 10 + 10 + 10 + 9 pixels, not
  // 4 x 12 + 1, whose one pixel took as long as a tile of 12 (two vector loads a pixel).
  const int64_t tiles = (pixels + R - 1) / R, tile_macs = R * g.c * o;
  // An image of few tiles is cut by output blocks too (in pairs, as the tiles take them).
  const int64_t threads = ctx->intra_op_pool()->NumThreads();
  int64_t parts = 1;
  while (threads > 1 && tiles * parts < kUnitsPerThread * threads && 2 * parts <= pairs &&
         tile_macs / (2 * parts) >= kMinPartMacs) {
    parts *= 2;
  }
  // Pairs [first_pair, last_pair) in turn over tiles [first_tile, last_tile): each pair's
  // panel is read once and its two output blocks written straight through (MobileNetV2's
  // 112x112 expansion into 6 blocks took 526 us in runs of 21 tiles each writing all six
  // blocks, 431 us so).
  const auto sweep = [&](int64_t first_pair, int64_t last_pair, int64_t first_tile, int64_t last_tile) {
    for (int64_t pair = first_pair; pair < last_pair; ++pair) {
      const int64_t first_block = 2 * pair;
      const bool two = first_block + 1 < blocks;
      const float* panel = panels + first_block * kBlock * g.c;
      const float* bias = epilogue.bias != nullptr ? epilogue.bias + first_block * kBlock : nullptr;
      for (int64_t t = first_tile; t < last_tile; ++t) {
        const int64_t first = t * pixels / tiles, rows = (t + 1) * pixels / tiles - first;
        kPairTiles<kBlock>[rows - 1](in + first * kBlock, plane, g.c / kBlock, panel, bias, epilogue,
                                     out + first_block * plane + first * kBlock, plane, two);
      }
    }
  };
  // Units are (tile, part), part fastest.
  ctx->ParallelFor(tiles * parts, tile_macs / parts / kBlock, [&](int64_t begin, int64_t end) {
    if (parts == 1) return sweep(0, pairs, begin, end);
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t part = unit % parts;
      sweep(part * pairs / parts, (part + 1) * pairs / parts, unit / parts, unit / parts + 1);
    }
  });
}

}  // namespace

StatusOr<Tensor> PairPanels(OpKernelContext* ctx, const float* filter, int64_t rows, int64_t o, int64_t block,
                            TransformedFilter* packed) {
  const auto pack = [&](float* panels) {
    for (int64_t first = 0; first < o; first += 2 * block) {
      const int64_t width = std::min(2 * block, o - first);
      for (int64_t k = 0; k < rows; ++k) std::copy_n(filter + k * o + first, width, panels + first * rows + k * width);
    }
  };
  if (packed != nullptr) return packed->Get(filter, rows * o, pack);
  Tensor panels;
  RETURN_IF_ERROR(ctx->allocate_temp(DataType::kFloat, TensorShape({rows * o}), &panels));
  pack(panels.data<float>());
  return panels;
}

bool PointwiseSuits(const Geometry& g, int64_t depthwise, const ConvEpilogue& epilogue) {
  return depthwise == 0 && g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 &&
         g.oh == g.h && g.ow == g.w && g.n == 1 && g.h * g.w > 1 && epilogue.max_pool == nullptr;
}

Status BlockedPointwiseConv2D(OpKernelContext* ctx, const Geometry& g, int64_t o, int64_t block, const float* in,
                              const float* filter, float* out, const ConvEpilogue& epilogue,
                              TransformedFilter* packed) {
  ASSIGN_OR_RETURN(const Tensor panels, PairPanels(ctx, filter, g.c, o, block, packed));
  if (block == 16) {
    Run<16>(ctx, g, o, in, panels.data<float>(), out, epilogue);
  } else {
    Run<8>(ctx, g, o, in, panels.data<float>(), out, epilogue);
  }
  return ctx->status();
}

}  // namespace tessera::cpu
