// Max and average pooling of whole NHWC images on one thread: what MaxPool and AvgPool run
// on each part of their batch, and what a convolution fused with its MaxPool runs on each
// chunk of its output while that chunk is still in cache (dnnl_conv.h); and the max pool's
// gradient from the argmax such a fused pool keeps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/util/conv_geometry.h"

namespace tessera::cpu {

// The rows [y0, y1) and columns [x0, x1) of g's input under output position (y, x)'s
// window, clipped to the input.
struct Window {
  int64_t y0, y1, x0, x1;
};
inline Window WindowAt(const Geometry& g, int64_t y, int64_t x) {
  return {std::max<int64_t>(y * g.sh - g.pad_top, 0), std::min<int64_t>(y * g.sh - g.pad_top + g.kh, g.h),
          std::max<int64_t>(x * g.sw - g.pad_left, 0), std::min<int64_t>(x * g.sw - g.pad_left + g.kw, g.w)};
}

// Calls fn(b, y, x, iy0, iy1, ix0, ix1) for every output position of images [first, last),
// with the window's rows [iy0, iy1) and columns [ix0, ix1) clipped to the input (WindowAt).
template <typename F>
void ForEachWindow(const Geometry& g, int64_t first, int64_t last, F&& fn) {
  for (int64_t b = first; b < last; ++b) {
    for (int64_t y = 0; y < g.oh; ++y) {
      for (int64_t x = 0; x < g.ow; ++x) {
        const Window win = WindowAt(g, y, x);
        fn(b, y, x, win.y0, win.y1, win.x0, win.x1);
      }
    }
  }
}

// A vector of 8 or 16 floats, which GCC cannot size from a template argument.
using Floats8 = float __attribute__((vector_size(32)));
using Floats16 = float __attribute__((vector_size(64)));

// out's images [first, last) from in's, by g's windows; AvgPool averages over the cells
// inside the input (TensorFlow's SAME rule). `in` and `out` never overlap. kChannels, where
// not 0, is g.c known when compiled (a blocked layout's 8 or 16): the window's result is then
// kept in a vector register or two (written as a loop over memory, the compiler stored each
// channel after each cell, a scalar at a time: ResNet50's first pool took 2.6x as long).
template <typename T, bool kMax, int64_t kChannels = 0>
void PoolImages(const T* in, const Geometry& g, int64_t first, int64_t last, T* out) {
  static_assert(kChannels == 0 || ((kChannels == 8 || kChannels == 16) && std::is_same_v<T, float>));
  const int64_t c = kChannels > 0 ? kChannels : g.c;
  ForEachWindow(g, first, last, [&](int64_t b, int64_t y, int64_t x, int64_t iy0, int64_t iy1, int64_t ix0, int64_t ix1) {
    T* __restrict dst = out + ((b * g.oh + y) * g.ow + x) * c;
    if constexpr (kChannels > 0) {
      using Vector = std::conditional_t<kChannels == 8, Floats8, Floats16>;
      Vector acc = Vector{} + (kMax ? std::numeric_limits<float>::lowest() : 0.f);
      for (int64_t iy = iy0; iy < iy1; ++iy) {
        for (int64_t ix = ix0; ix < ix1; ++ix) {
          Vector v;
          std::memcpy(&v, in + ((b * g.h + iy) * g.w + ix) * c, sizeof v);
          if constexpr (kMax) {
            acc = v > acc ? v : acc;  // std::max(acc, v), lane by lane
          } else {
            acc += v;
          }
        }
      }
      if (!kMax) acc /= static_cast<float>((iy1 - iy0) * (ix1 - ix0));
      std::memcpy(dst, &acc, sizeof acc);
      return;
    }
    std::fill(dst, dst + c, kMax ? std::numeric_limits<T>::lowest() : T(0));
    for (int64_t iy = iy0; iy < iy1; ++iy) {
      for (int64_t ix = ix0; ix < ix1; ++ix) {
        // __restrict: input and output never overlap, and saying so lets this loop vectorise.
        const T* __restrict src = in + ((b * g.h + iy) * g.w + ix) * c;
        for (int64_t ci = 0; ci < c; ++ci) dst[ci] = kMax ? std::max(dst[ci], src[ci]) : dst[ci] + src[ci];
      }
    }
    if (!kMax) {
      const T count = static_cast<T>((iy1 - iy0) * (ix1 - ix0));
      for (int64_t ci = 0; ci < c; ++ci) dst[ci] /= count;
    }
  });
}

// A max pool's argmax, per output value: the window's first cell holding the maximum, cells
// numbered row-major within the window clipped to the input, or kNoGradient where nothing
// receives the gradient (an empty window, or with `relu` a maximum that is not above zero,
// where ReluGrad would zero it). Windows have at most kMaxArgmaxCells cells.
constexpr uint8_t kNoGradient = 255;
constexpr int64_t kMaxArgmaxCells = 255;

// The maxima and argmaxes of one window over 16 channels [c0, c0 + 16) of an NHWC image, in
// vector registers (64 bytes: one AVX-512 register, two AVX2 ones). Written as loops over
// memory, the compiler stored each choice of a cell to the lanes chosen behind a branch on
// whether there were any, a coin flip on real activations.
inline void MaxAndArgmaxOf16(const float* image, int64_t w, int64_t channels, int64_t c0, int64_t iy0, int64_t iy1,
                             int64_t ix0, int64_t ix1, bool relu, float* out, uint8_t* argmax) {
  using Floats = float __attribute__((vector_size(64)));
  using Ints = int32_t __attribute__((vector_size(64)));
  Floats best = Floats{} + std::numeric_limits<float>::lowest();
  Ints cell_of = Ints{} + kNoGradient;
  int32_t cell = 0;
  for (int64_t iy = iy0; iy < iy1; ++iy) {
    for (int64_t ix = ix0; ix < ix1; ++ix, ++cell) {
      Floats v;
      std::memcpy(&v, image + (iy * w + ix) * channels + c0, sizeof v);
      const Ints greater = v > best;  // strict: the first maximum stays
      best = greater ? v : best;
      cell_of = greater ? Ints{} + cell : cell_of;
    }
  }
  if (relu) cell_of = best > Floats{} ? cell_of : Ints{} + kNoGradient;
  std::memcpy(out + c0, &best, sizeof best);
  for (int lane = 0; lane < 16; ++lane) argmax[c0 + lane] = static_cast<uint8_t>(cell_of[lane]);
}

// PoolImages<float, true> that also writes each output's argmax: 16 channels at a time,
// then one.
inline void MaxPoolImagesWithArgmax(const float* in, const Geometry& g, int64_t first, int64_t last, bool relu,
                                    float* out, uint8_t* argmax) {
  ForEachWindow(g, first, last, [&](int64_t b, int64_t y, int64_t x, int64_t iy0, int64_t iy1, int64_t ix0, int64_t ix1) {
    const float* image = in + b * g.h * g.w * g.c;
    const int64_t at = ((b * g.oh + y) * g.ow + x) * g.c;
    int64_t c0 = 0;
    for (; c0 + 16 <= g.c; c0 += 16) MaxAndArgmaxOf16(image, g.w, g.c, c0, iy0, iy1, ix0, ix1, relu, out + at, argmax + at);
    for (; c0 < g.c; ++c0) {
      float best = std::numeric_limits<float>::lowest();
      int32_t cell_of = kNoGradient, cell = 0;
      for (int64_t iy = iy0; iy < iy1; ++iy) {
        for (int64_t ix = ix0; ix < ix1; ++ix, ++cell) {
          const float v = image[(iy * g.w + ix) * g.c + c0];
          if (v > best) best = v, cell_of = cell;
        }
      }
      out[at + c0] = best;
      argmax[at + c0] = static_cast<uint8_t>(relu && !(best > 0.f) ? kNoGradient : cell_of);
    }
  });
}

// MaxPoolImagesWithArgmax (with `argmax`) or PoolImages<float, true> (without) over an input
// in oneDNN's nChw16c layout, [N, C / 16, H, W, 16], which its Winograd convolution writes:
// the pool reads that output as it is, without a reorder to NHWC first. C is a multiple of
// 16; `out` and `argmax` are NHWC.
inline void MaxPoolBlockedImages(const float* in, const Geometry& g, int64_t first, int64_t last, bool relu, float* out,
                                 uint8_t* argmax) {
  const int64_t blocks = g.c / 16;
  uint8_t unused[16];
  ForEachWindow(g, first, last, [&](int64_t b, int64_t y, int64_t x, int64_t iy0, int64_t iy1, int64_t ix0, int64_t ix1) {
    const int64_t at = ((b * g.oh + y) * g.ow + x) * g.c;
    for (int64_t cb = 0; cb < blocks; ++cb) {
      const float* block = in + (b * blocks + cb) * g.h * g.w * 16;
      MaxAndArgmaxOf16(block, g.w, 16, 0, iy0, iy1, ix0, ix1, relu, out + at + cb * 16,
                       argmax != nullptr ? argmax + at + cb * 16 : unused);
    }
  });
}

// The gradient of images [first, last) of a max pool's input, `d_in` [N, H, W, C], from the
// gradient of its output and its argmax; and added onto `channel_sums` [C], each channel's
// sum of that gradient (a BiasAdd's gradient before the pool). Windows that do not overlap
// write each of their cells once; `d_in` must be zero first unless they also tile the input.
inline void MaxPoolGradFromArgmax(const float* grad, const uint8_t* argmax, const Geometry& g, int64_t first,
                                  int64_t last, float* d_in, float* channel_sums) {
  const bool disjoint = g.sh >= g.kh && g.sw >= g.kw;
  // The argmax widened to int32 first: a loop mixing floats and bytes vectorises by the
  // bytes' width, 64 lanes, which a layer of 32 channels never fills.
  thread_local std::vector<int32_t> cells;
  cells.resize(g.c);
  ForEachWindow(g, first, last, [&](int64_t b, int64_t y, int64_t x, int64_t iy0, int64_t iy1, int64_t ix0, int64_t ix1) {
    const int64_t channels = g.c;  // a local, which no store below can be taken to change
    const int64_t at = ((b * g.oh + y) * g.ow + x) * channels;
    const float* __restrict from = grad + at;
    const uint8_t* __restrict narrow = argmax + at;
    int32_t* __restrict cell_of = cells.data();
    for (int64_t ci = 0; ci < channels; ++ci) cell_of[ci] = narrow[ci];
    float* __restrict sums = channel_sums;
    for (int64_t ci = 0; ci < channels; ++ci) sums[ci] += cell_of[ci] != kNoGradient ? from[ci] : 0.f;
    const int64_t width = ix1 - ix0;
    auto cell_start = [&](int64_t cell) { return ((b * g.h + iy0 + cell / width) * g.w + ix0 + cell % width) * channels; };
    if (disjoint) {
      const int32_t count = static_cast<int32_t>((iy1 - iy0) * width);
      for (int32_t cell = 0; cell < count; ++cell) {
        float* __restrict dst = d_in + cell_start(cell);
        for (int64_t ci = 0; ci < channels; ++ci) dst[ci] = cell_of[ci] == cell ? from[ci] : 0.f;
      }
      return;
    }
    for (int64_t ci = 0; ci < channels; ++ci) {
      if (cell_of[ci] != kNoGradient) d_in[cell_start(cell_of[ci]) + ci] += from[ci];
    }
  });
}

// Whether g's windows tile its input exactly (2x2 stride 2 over an even size): each input
// cell is in one window.
inline bool WindowsTile(const Geometry& g) {
  return g.sh == g.kh && g.sw == g.kw && g.oh * g.sh == g.h && g.ow * g.sw == g.w && g.pad_top == 0 &&
         g.pad_left == 0;
}

}  // namespace tessera::cpu
