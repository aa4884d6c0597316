#include "devices/cpu/small_conv.h"

#include <cstring>
#include <limits>

#include "devices/cpu/pooling.h"  // kNoGradient, WindowAt

namespace tessera::cpu {
namespace {

// 16 floats (or int32s): one AVX-512 register, two AVX2 ones.
using Floats = float __attribute__((vector_size(64)));
using Ints = int32_t __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16;

// A window's taps in the filter's [KH, KW, C] order: each one's row and column within the
// window and its offset in floats from the window's first cell in an NHWC image. Taps past
// the window's own (kTaps is a bound) repeat its first; their filter values are zero.
template <int kTaps>
struct Taps {
  explicit Taps(const Geometry& g) {
    int t = 0;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        for (int64_t ci = 0; ci < g.c; ++ci, ++t) dy[t] = ky, dx[t] = kx, offset[t] = (ky * g.w + kx) * g.c + ci;
      }
    }
    for (; t < kTaps; ++t) dy[t] = dx[t] = offset[t] = 0;
  }
  int64_t dy[kTaps], dx[kTaps], offset[kTaps];
};

// The taps' values of conv's window at output position (oy, ox) of `image`, zero where it
// hangs over the padding. Loops of a fixed count: with the window's own sizes, the compiler
// turned them into a memcpy call per input channel.
template <int kTaps>
[[gnu::always_inline]] inline void Gather(const Geometry& g, const Taps<kTaps>& taps, const float* image, int64_t oy,
                                          int64_t ox, float* patch) {
  const int64_t iy = oy * g.sh - g.pad_top, ix = ox * g.sw - g.pad_left, corner = (iy * g.w + ix) * g.c;
  if (iy >= 0 && ix >= 0 && iy + g.kh <= g.h && ix + g.kw <= g.w) {
    for (int t = 0; t < kTaps; ++t) patch[t] = image[corner + taps.offset[t]];
    return;
  }
  for (int t = 0; t < kTaps; ++t) {
    const int64_t y = iy + taps.dy[t], x = ix + taps.dx[t];
    patch[t] = y >= 0 && y < g.h && x >= 0 && x < g.w ? image[corner + taps.offset[t]] : 0.f;
  }
}

Floats Load(const float* p) {
  Floats v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// kTaps and kBlocks as template parameters keep kBlocks blocks of 16 filters (or their
// gradient's sums) in registers, as locals of the loops (captured by a lambda, they stayed
// in memory); a window of fewer taps is padded with zeros. Two blocks at once share each
// gathered window and give the multiply-adds two chains to overlap.
template <int kTaps, int kBlocks>
void MaxPool(const Geometry& conv, const Geometry& pool, int64_t o, const float* in, const float* filter,
             const float* bias, bool relu, int64_t first, int64_t last, float* out, uint8_t* argmax) {
  const int64_t taps = conv.kh * conv.kw * conv.c;
  const Taps<kTaps> window_taps(conv);
  for (int64_t c0 = 0; c0 < o; c0 += kBlocks * kLanes) {
    Floats w[kBlocks][kTaps], b[kBlocks];
    for (int k = 0; k < kBlocks; ++k) {
      for (int t = 0; t < kTaps; ++t) w[k][t] = t < taps ? Load(filter + t * o + c0 + k * kLanes) : Floats{};
      b[k] = Load(bias + c0 + k * kLanes);
    }
    for (int64_t n = first; n < last; ++n) {
      const float* image = in + n * conv.h * conv.w * conv.c;
      for (int64_t y = 0; y < pool.oh; ++y) {
        for (int64_t x = 0; x < pool.ow; ++x) {
          const Window win = WindowAt(pool, y, x);
          // As MaxAndArgmaxOf16 (pooling.h): the first maximum's cell, strictly.
          Floats best[kBlocks];
          Ints cell_of[kBlocks];
          for (int k = 0; k < kBlocks; ++k) {
            best[k] = Floats{} + std::numeric_limits<float>::lowest();
            cell_of[k] = Ints{} + kNoGradient;
          }
          int32_t cell = 0;
          for (int64_t oy = win.y0; oy < win.y1; ++oy) {
            for (int64_t ox = win.x0; ox < win.x1; ++ox, ++cell) {
              float patch[kTaps];
              Gather(conv, window_taps, image, oy, ox, patch);
              for (int k = 0; k < kBlocks; ++k) {
                Floats v = b[k];
                for (int t = 0; t < kTaps; ++t) v += patch[t] * w[k][t];
                if (relu) v = v > Floats{} ? v : Floats{};
                const Ints greater = v > best[k];
                best[k] = greater ? v : best[k];
                cell_of[k] = greater ? Ints{} + cell : cell_of[k];
              }
            }
          }
          const int64_t at = ((n * pool.oh + y) * pool.ow + x) * o + c0;
          for (int k = 0; k < kBlocks; ++k) {
            std::memcpy(out + at + k * kLanes, &best[k], sizeof best[k]);
            if (argmax == nullptr) continue;
            if (relu) cell_of[k] = best[k] > Floats{} ? cell_of[k] : Ints{} + kNoGradient;
            for (int lane = 0; lane < kLanes; ++lane) {
              argmax[at + k * kLanes + lane] = static_cast<uint8_t>(cell_of[k][lane]);
            }
          }
        }
      }
    }
  }
}

// Each window's cells in turn, every cell's gradient the pooled one where it holds the
// argmax and zero elsewhere: three multiply-adds in four for nothing with a 2x2 pool, but
// in vector registers, with no gradient of the convolution's output written or read.
template <int kTaps, int kBlocks>
void MaxPoolBackpropFilter(const Geometry& conv, const Geometry& pool, int64_t o, const float* in, const float* grad,
                           const uint8_t* argmax, int64_t first, int64_t last, float* d_filter, float* d_bias) {
  const int64_t taps = conv.kh * conv.kw * conv.c;
  const Taps<kTaps> window_taps(conv);
  for (int64_t c0 = 0; c0 < o; c0 += kBlocks * kLanes) {
    Floats sums[kBlocks][kTaps] = {};
    Floats bias_sums[kBlocks] = {};
    for (int64_t n = first; n < last; ++n) {
      const float* image = in + n * conv.h * conv.w * conv.c;
      for (int64_t y = 0; y < pool.oh; ++y) {
        for (int64_t x = 0; x < pool.ow; ++x) {
          const Window win = WindowAt(pool, y, x);
          const int64_t at = ((n * pool.oh + y) * pool.ow + x) * o + c0;
          Floats g[kBlocks];
          Ints cell_of[kBlocks];
          for (int k = 0; k < kBlocks; ++k) {
            g[k] = Load(grad + at + k * kLanes);
            for (int lane = 0; lane < kLanes; ++lane) cell_of[k][lane] = argmax[at + k * kLanes + lane];
            bias_sums[k] += cell_of[k] != kNoGradient ? g[k] : Floats{};
          }
          int32_t cell = 0;
          for (int64_t oy = win.y0; oy < win.y1; ++oy) {
            for (int64_t ox = win.x0; ox < win.x1; ++ox, ++cell) {
              float patch[kTaps];
              Gather(conv, window_taps, image, oy, ox, patch);
              for (int k = 0; k < kBlocks; ++k) {
                const Floats d = cell_of[k] == cell ? g[k] : Floats{};
                for (int t = 0; t < kTaps; ++t) sums[k][t] += patch[t] * d;
              }
            }
          }
        }
      }
    }
    for (int k = 0; k < kBlocks; ++k) {
      for (int64_t t = 0; t < taps; ++t) {
        float* dst = d_filter + t * o + c0 + k * kLanes;
        for (int lane = 0; lane < kLanes; ++lane) dst[lane] += sums[k][t][lane];
      }
      for (int lane = 0; lane < kLanes; ++lane) d_bias[c0 + k * kLanes + lane] += bias_sums[k][lane];
    }
  }
}

}  // namespace

bool SmallConvApplies(const Geometry& conv, int64_t o) {
  const int64_t taps = conv.kh * conv.kw * conv.c;
  return taps > 0 && taps <= kSmallConvTaps && o > 0 && o % kLanes == 0;
}

// Up to 9 taps, two blocks of filters at a time where the filters come in pairs of blocks
// (18 registers of filter); up to 27, one.
void SmallConvMaxPool(const Geometry& conv, const Geometry& pool, int64_t o, const float* in, const float* filter,
                      const float* bias, bool relu, int64_t first, int64_t last, float* out, uint8_t* argmax) {
  if (conv.kh * conv.kw * conv.c > 9) {
    MaxPool<kSmallConvTaps, 1>(conv, pool, o, in, filter, bias, relu, first, last, out, argmax);
  } else if (o % (2 * kLanes) == 0) {
    MaxPool<9, 2>(conv, pool, o, in, filter, bias, relu, first, last, out, argmax);
  } else {
    MaxPool<9, 1>(conv, pool, o, in, filter, bias, relu, first, last, out, argmax);
  }
}

void SmallConvMaxPoolBackpropFilter(const Geometry& conv, const Geometry& pool, int64_t o, const float* in,
                                    const float* grad, const uint8_t* argmax, int64_t first, int64_t last,
                                    float* d_filter, float* d_bias) {
  if (conv.kh * conv.kw * conv.c > 9) {
    MaxPoolBackpropFilter<kSmallConvTaps, 1>(conv, pool, o, in, grad, argmax, first, last, d_filter, d_bias);
  } else if (o % (2 * kLanes) == 0) {
    MaxPoolBackpropFilter<9, 2>(conv, pool, o, in, grad, argmax, first, last, d_filter, d_bias);
  } else {
    MaxPoolBackpropFilter<9, 1>(conv, pool, o, in, grad, argmax, first, last, d_filter, d_bias);
  }
}

}  // namespace tessera::cpu
