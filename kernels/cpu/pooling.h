// Max and average pooling of whole NHWC images on one thread: what MaxPool and AvgPool run
// on each part of their batch, and what a convolution fused with its MaxPool runs on each
// chunk of its output while that chunk is still in cache (dnnl_conv.h).
#pragma once

#include <algorithm>
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

}  // namespace tessera::cpu
