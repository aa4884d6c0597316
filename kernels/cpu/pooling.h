// Max and average pooling of whole NHWC images on one thread: what MaxPool and AvgPool run
// on each part of their batch, and what a convolution fused with its MaxPool runs on each
// chunk of its output while that chunk is still in cache (dnnl_conv.h); and the max pool's
// gradient from the argmax such a fused pool keeps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/conv_geometry.h"

namespace tessera::cpu {

// Calls fn(b, y, x, iy0, iy1, ix0, ix1) for every output position of images [first, last),
// with the window's rows [iy0, iy1) and columns [ix0, ix1) clipped to the input.
template <typename F>
void ForEachWindow(const Geometry& g, int64_t first, int64_t last, F&& fn) {
  for (int64_t b = first; b < last; ++b) {
    for (int64_t y = 0; y < g.oh; ++y) {
      const int64_t iy0 = std::max<int64_t>(y * g.sh - g.pad_top, 0);
      const int64_t iy1 = std::min<int64_t>(y * g.sh - g.pad_top + g.kh, g.h);
      for (int64_t x = 0; x < g.ow; ++x) {
        const int64_t ix0 = std::max<int64_t>(x * g.sw - g.pad_left, 0);
        const int64_t ix1 = std::min<int64_t>(x * g.sw - g.pad_left + g.kw, g.w);
        fn(b, y, x, iy0, iy1, ix0, ix1);
      }
    }
  }
}

// out's images [first, last) from in's, by g's windows; AvgPool averages over the cells
// inside the input (TensorFlow's SAME rule). `in` and `out` never overlap.
template <typename T, bool kMax>
void PoolImages(const T* in, const Geometry& g, int64_t first, int64_t last, T* out) {
  ForEachWindow(g, first, last, [&](int64_t b, int64_t y, int64_t x, int64_t iy0, int64_t iy1, int64_t ix0, int64_t ix1) {
    T* __restrict dst = out + ((b * g.oh + y) * g.ow + x) * g.c;
    std::fill(dst, dst + g.c, kMax ? std::numeric_limits<T>::lowest() : T(0));
    for (int64_t iy = iy0; iy < iy1; ++iy) {
      for (int64_t ix = ix0; ix < ix1; ++ix) {
        // __restrict: input and output never overlap, and saying so lets this loop vectorise.
        const T* __restrict src = in + ((b * g.h + iy) * g.w + ix) * g.c;
        for (int64_t ci = 0; ci < g.c; ++ci) dst[ci] = kMax ? std::max(dst[ci], src[ci]) : dst[ci] + src[ci];
      }
    }
    if (!kMax) {
      const T count = static_cast<T>((iy1 - iy0) * (ix1 - ix0));
      for (int64_t ci = 0; ci < g.c; ++ci) dst[ci] /= count;
    }
  });
}

// A max pool's argmax, per output value: the window's first cell holding the maximum, cells
// numbered row-major within the window clipped to the input, or kNoGradient where nothing
// receives the gradient (an empty window, or with `relu` a maximum that is not above zero,
// where ReluGrad would zero it). Windows have at most kMaxArgmaxCells cells.
constexpr uint8_t kNoGradient = 255;
constexpr int64_t kMaxArgmaxCells = 255;

// PoolImages<float, true> that also writes each output's argmax.
inline void MaxPoolImagesWithArgmax(const float* in, const Geometry& g, int64_t first, int64_t last, bool relu,
                                    float* out, uint8_t* argmax) {
  ForEachWindow(g, first, last, [&](int64_t b, int64_t y, int64_t x, int64_t iy0, int64_t iy1, int64_t ix0, int64_t ix1) {
    // A local: a store through a uint8_t* may alias anything, g.c included, which would keep
    // the channel loops from vectorising.
    const int64_t channels = g.c;
    const int64_t at = ((b * g.oh + y) * g.ow + x) * channels;
    float* __restrict dst = out + at;
    uint8_t* __restrict cell_of = argmax + at;
    std::fill(dst, dst + channels, std::numeric_limits<float>::lowest());
    std::fill(cell_of, cell_of + channels, kNoGradient);
    uint8_t cell = 0;
    for (int64_t iy = iy0; iy < iy1; ++iy) {
      for (int64_t ix = ix0; ix < ix1; ++ix, ++cell) {
        const float* __restrict src = in + ((b * g.h + iy) * g.w + ix) * channels;
        // Selects, not branches, so that the channels vectorise; a strict > keeps the first.
        for (int64_t ci = 0; ci < channels; ++ci) {
          const bool greater = src[ci] > dst[ci];
          dst[ci] = greater ? src[ci] : dst[ci];
          cell_of[ci] = greater ? cell : cell_of[ci];
        }
      }
    }
    if (relu) {
      for (int64_t ci = 0; ci < channels; ++ci) cell_of[ci] = dst[ci] > 0.f ? cell_of[ci] : kNoGradient;
    }
  });
}

// The gradient of images [first, last) of a max pool's input, `d_in` [N, H, W, C], from the
// gradient of its output and its argmax; and added onto `channel_sums` [C], each channel's
// sum of that gradient (a BiasAdd's gradient before the pool). `d_in` must be zero first
// unless the windows tile the input exactly, when every cell is written once.
inline void MaxPoolGradFromArgmax(const float* grad, const uint8_t* argmax, const Geometry& g, bool tiles,
                                  int64_t first, int64_t last, float* d_in, float* channel_sums) {
  ForEachWindow(g, first, last, [&](int64_t b, int64_t y, int64_t x, int64_t iy0, int64_t iy1, int64_t ix0, int64_t ix1) {
    const int64_t channels = g.c;  // a local, for the reason MaxPoolImagesWithArgmax gives
    const int64_t at = ((b * g.oh + y) * g.ow + x) * channels;
    const float* __restrict from = grad + at;
    const uint8_t* __restrict cell_of = argmax + at;
    float* __restrict sums = channel_sums;
    for (int64_t ci = 0; ci < channels; ++ci) sums[ci] += cell_of[ci] != kNoGradient ? from[ci] : 0.f;
    const int64_t width = ix1 - ix0;
    auto cell_start = [&](int64_t cell) { return ((b * g.h + iy0 + cell / width) * g.w + ix0 + cell % width) * channels; };
    if (tiles) {
      const int64_t cells = (iy1 - iy0) * width;
      for (int64_t cell = 0; cell < cells; ++cell) {
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
