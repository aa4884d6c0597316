// MaxPool, AvgPool and their gradients, NHWC, with the CPU kernels' rules (devices/cpu/
// conv_ops.cc): the same windows, the first maximum on ties, the same order of sums. The
// gradients gather (one thread per input cell, over the windows that cover it) rather than
// scatter, so they need no atomics and give the same bits every run. A max pool whose
// windows do not overlap (stride >= window, the CNNs' 2x2/2) instead takes one thread per
// window, which writes its cells: each cell then has one writer, and a quarter of the
// threads find the maximum once rather than each of its cells finding it again (78 against
// 14 us for the seeds' first pool gradient on an H100, measured with ncu).
#include <cfloat>

#include "devices/gpu/cuda_launch_util.cuh"
#include "devices/gpu/launch.h"

namespace tessera::gpu {
namespace {

template <typename T>
__device__ T Lowest();
template <>
__device__ float Lowest<float>() {
  return -FLT_MAX;
}
template <>
__device__ double Lowest<double>() {
  return -DBL_MAX;
}

// A window's rows [y0, y1) and columns [x0, x1), clipped to the input.
struct Window {
  int64_t y0, y1, x0, x1;
};
__device__ Window WindowAt(const PoolWindows& g, int64_t y, int64_t x) {
  const int64_t top = y * g.sh - g.pad_top, left = x * g.sw - g.pad_left;
  return {max(top, int64_t{0}), min(top + g.kh, g.h), max(left, int64_t{0}), min(left + g.kw, g.w)};
}

template <typename T, bool kMax>
__global__ void PoolKernel(const T* in, T* out, PoolWindows g, int64_t n) {
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    const int64_t c = i % g.c, x = (i / g.c) % g.ow, y = (i / g.c / g.ow) % g.oh, b = i / g.c / g.ow / g.oh;
    const Window win = WindowAt(g, y, x);
    T acc = kMax ? Lowest<T>() : T(0);
    for (int64_t iy = win.y0; iy < win.y1; ++iy) {
      for (int64_t ix = win.x0; ix < win.x1; ++ix) {
        const T v = in[((b * g.h + iy) * g.w + ix) * g.c + c];
        acc = kMax ? (acc < v ? v : acc) : acc + v;
      }
    }
    out[i] = kMax ? acc : acc / static_cast<T>((win.y1 - win.y0) * (win.x1 - win.x0));
  }
}

// The windows along one dimension that cover input index i, [first, last]: window o covers
// i when o * s - pad <= i < o * s - pad + k.
__device__ void Covering(int64_t i, int64_t pad, int64_t k, int64_t s, int64_t outputs, int64_t* first,
                         int64_t* last) {
  const int64_t lo = i + pad - k + 1;
  *first = lo <= 0 ? 0 : (lo + s - 1) / s;
  *last = min((i + pad) / s, outputs - 1);
}

// Input cell i of a gradient and the output windows [y_first, y_last] x [x_first, x_last]
// that cover it.
struct InputCell {
  int64_t b, iy, ix, c;
  int64_t y_first, y_last, x_first, x_last;
};
__device__ InputCell CellAt(const PoolWindows& g, int64_t i) {
  InputCell cell{i / g.c / g.w / g.h, (i / g.c / g.w) % g.h, (i / g.c) % g.w, i % g.c, 0, 0, 0, 0};
  Covering(cell.iy, g.pad_top, g.kh, g.sh, g.oh, &cell.y_first, &cell.y_last);
  Covering(cell.ix, g.pad_left, g.kw, g.sw, g.ow, &cell.x_first, &cell.x_last);
  return cell;
}

template <typename T>
__global__ void MaxPoolGradKernel(const T* in, const T* grad, T* d_in, PoolWindows g, int64_t n) {
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    const InputCell cell = CellAt(g, i);
    const int64_t b = cell.b, c = cell.c;
    T sum = 0;
    for (int64_t y = cell.y_first; y <= cell.y_last; ++y) {
      for (int64_t x = cell.x_first; x <= cell.x_last; ++x) {
        const Window win = WindowAt(g, y, x);
        int64_t best_y = win.y0, best_x = win.x0;
        T best = in[((b * g.h + win.y0) * g.w + win.x0) * g.c + c];
        for (int64_t wy = win.y0; wy < win.y1; ++wy) {
          for (int64_t wx = win.x0; wx < win.x1; ++wx) {
            const T v = in[((b * g.h + wy) * g.w + wx) * g.c + c];
            if (v > best) best = v, best_y = wy, best_x = wx;
          }
        }
        if (best_y == cell.iy && best_x == cell.ix) sum += grad[((b * g.oh + y) * g.ow + x) * g.c + c];
      }
    }
    d_in[i] = sum;
  }
}

// One thread per window of a pool whose windows are disjoint: the window's first maximum
// gets the window's gradient, its other cells zero. Cells in no window are zeroed before.
template <typename T, typename Index>
__global__ void DisjointMaxPoolGradKernel(const T* in, const T* grad, T* d_in, PoolWindows g, Index n) {
  const Index c_count = static_cast<Index>(g.c), ow = static_cast<Index>(g.ow), oh = static_cast<Index>(g.oh);
  for (Index i = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index c = i % c_count, rest = i / c_count, x = rest % ow, y = (rest / ow) % oh, b = rest / ow / oh;
    const Window win = WindowAt(g, y, x);
    const Index row = static_cast<Index>(g.w) * c_count, image = static_cast<Index>(g.h) * row;
    const Index first = b * image + static_cast<Index>(win.y0) * row + static_cast<Index>(win.x0) * c_count + c;
    Index best_at = first;
    T best = in[first];
    for (Index wy = static_cast<Index>(win.y0); wy < static_cast<Index>(win.y1); ++wy) {
      for (Index wx = static_cast<Index>(win.x0); wx < static_cast<Index>(win.x1); ++wx) {
        const Index at = b * image + wy * row + wx * c_count + c;
        const T v = in[at];
        if (v > best) best = v, best_at = at;
      }
    }
    const T gradient = grad[i];
    for (Index wy = static_cast<Index>(win.y0); wy < static_cast<Index>(win.y1); ++wy) {
      for (Index wx = static_cast<Index>(win.x0); wx < static_cast<Index>(win.x1); ++wx) {
        const Index at = b * image + wy * row + wx * c_count + c;
        d_in[at] = at == best_at ? gradient : T(0);
      }
    }
  }
}

template <typename T>
__global__ void AvgPoolGradKernel(const T* grad, T* d_in, PoolWindows g, int64_t n) {
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    const InputCell cell = CellAt(g, i);
    T sum = 0;
    for (int64_t y = cell.y_first; y <= cell.y_last; ++y) {
      for (int64_t x = cell.x_first; x <= cell.x_last; ++x) {
        const Window win = WindowAt(g, y, x);
        const T scale = T(1) / static_cast<T>((win.y1 - win.y0) * (win.x1 - win.x0));
        sum += grad[((cell.b * g.oh + y) * g.ow + x) * g.c + cell.c] * scale;
      }
    }
    d_in[i] = sum;
  }
}

}  // namespace

template <typename T>
cudaError_t Pool(bool max, const T* in, T* out, const PoolWindows& g, cudaStream_t stream) {
  const int64_t n = g.n * g.oh * g.ow * g.c;
  if (n == 0) return cudaSuccess;
  if (max) {
    PoolKernel<T, true><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(in, out, g, n);
  } else {
    PoolKernel<T, false><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(in, out, g, n);
  }
  return LaunchError();
}

template <typename T>
cudaError_t MaxPoolGrad(const T* in, const T* grad, T* d_in, const PoolWindows& g, cudaStream_t stream) {
  const int64_t n = g.n * g.h * g.w * g.c;
  if (n == 0) return cudaSuccess;
  if (g.sh < g.kh || g.sw < g.kw) {
    MaxPoolGradKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(in, grad, d_in, g, n);
    return LaunchError();
  }
  const bool tiled = g.sh == g.kh && g.sw == g.kw && g.pad_top == 0 && g.pad_left == 0 && g.oh * g.sh == g.h &&
                     g.ow * g.sw == g.w;
  if (!tiled) {
    const cudaError_t zeroed = cudaMemsetAsync(d_in, 0, n * sizeof(T), stream);
    if (zeroed != cudaSuccess) return zeroed;
  }
  const int64_t windows = g.n * g.oh * g.ow * g.c;
  if (windows == 0) return cudaSuccess;
  if (n <= INT32_MAX / 2) {  // 32-bit index arithmetic is several times cheaper on a GPU; the stride must not overflow
    DisjointMaxPoolGradKernel<T, int32_t><<<BlocksFor(windows), kThreadsPerBlock, 0, stream>>>(
        in, grad, d_in, g, static_cast<int32_t>(windows));
  } else {
    DisjointMaxPoolGradKernel<T, int64_t><<<BlocksFor(windows), kThreadsPerBlock, 0, stream>>>(in, grad, d_in, g,
                                                                                             windows);
  }
  return LaunchError();
}

template <typename T>
cudaError_t AvgPoolGrad(const T* grad, T* d_in, const PoolWindows& g, cudaStream_t stream) {
  const int64_t n = g.n * g.h * g.w * g.c;
  if (n == 0) return cudaSuccess;
  AvgPoolGradKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(grad, d_in, g, n);
  return LaunchError();
}

#define TESSERA_INSTANTIATE(T)                                                                          \
  template cudaError_t Pool<T>(bool, const T*, T*, const PoolWindows&, cudaStream_t);                   \
  template cudaError_t MaxPoolGrad<T>(const T*, const T*, T*, const PoolWindows&, cudaStream_t);        \
  template cudaError_t AvgPoolGrad<T>(const T*, T*, const PoolWindows&, cudaStream_t);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
#undef TESSERA_INSTANTIATE

}  // namespace tessera::gpu
