// Transpose, and the padding and cropping that adapt TensorFlow's SAME padding to cuDNN.
#include "devices/gpu/cuda_launch_util.cuh"
#include "devices/gpu/launch.h"

namespace tessera::gpu {
namespace {

// Each thread writes one output element, reading the input element its coordinates name.
template <typename T>
__global__ void TransposeKernel(const T* in, T* out, Permutation p, int64_t n) {
  int64_t in_strides[kMaxTransposeRank];
  int64_t stride = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    in_strides[d] = stride;
    stride *= p.in_dims[d];
  }
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    int64_t rest = i, src = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t size = p.in_dims[p.perm[d]];
      src += (rest % size) * in_strides[p.perm[d]];
      rest /= size;
    }
    out[i] = in[src];
  }
}

// Each image's [rows, cols] matrix to [cols, rows], through a shared tile so that reads and
// writes are both coalesced. With kEpilogue, the output (channels last) gets bias[row]
// added and ReLU applied. Grids past CUDA's limits loop over images and tile rows.
constexpr int kTile = 32, kTileRows = 8;

template <typename T, bool kEpilogue>
__global__ void BatchedTransposeKernel(const T* in, const T* bias, bool relu, T* out, int64_t images, int64_t rows,
                                       int64_t cols) {
  __shared__ T tile[kTile][kTile + 1];  // +1: no bank conflicts on the column reads
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  for (int64_t image = blockIdx.z; image < images; image += gridDim.z) {
    const T* src = in + image * rows * cols;
    T* dst = out + image * rows * cols;
    for (int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile; row0 < rows; row0 += int64_t{gridDim.y} * kTile) {
      for (int r = threadIdx.y; r < kTile; r += kTileRows) {
        const int64_t row = row0 + r, col = col0 + threadIdx.x;
        if (row < rows && col < cols) tile[r][threadIdx.x] = src[row * cols + col];
      }
      __syncthreads();
      for (int c = threadIdx.y; c < kTile; c += kTileRows) {
        const int64_t col = col0 + c, row = row0 + threadIdx.x;  // out[col][row]
        if (row < rows && col < cols) {
          T v = tile[threadIdx.x][c];
          if (kEpilogue) {
            if (bias != nullptr) v += bias[row];
            if (relu && v < T(0)) v = T(0);
          }
          dst[col * rows + row] = v;
        }
      }
      __syncthreads();  // the tile is refilled next
    }
  }
}

template <typename T, bool kEpilogue>
cudaError_t BatchedTranspose(const T* in, const T* bias, bool relu, T* out, int64_t images, int64_t rows, int64_t cols,
                             cudaStream_t stream) {
  if (images * rows * cols == 0) return cudaSuccess;
  const int64_t grid_x = (cols + kTile - 1) / kTile, grid_y = (rows + kTile - 1) / kTile;
  if (grid_x > 2147483647) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(std::min<int64_t>(grid_y, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(images, 65535)));
  BatchedTransposeKernel<T, kEpilogue>
      <<<grid, dim3(kTile, kTileRows), 0, stream>>>(in, bias, relu, out, images, rows, cols);
  return LaunchError();
}

template <typename T, bool kPad>
__global__ void PadOrCropKernel(const T* from, T* to, NhwcPadding p, int64_t n) {
  const int64_t ph = p.h + p.bottom, pw = p.w + p.right;
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    // i indexes the padded tensor when padding, the cropped one when cropping.
    const int64_t c = i % p.c;
    const int64_t x = (i / p.c) % (kPad ? pw : p.w);
    const int64_t y = (i / p.c / (kPad ? pw : p.w)) % (kPad ? ph : p.h);
    const int64_t b = i / p.c / (kPad ? pw : p.w) / (kPad ? ph : p.h);
    if (kPad) {
      to[i] = y < p.h && x < p.w ? from[((b * p.h + y) * p.w + x) * p.c + c] : T(0);
    } else {
      to[i] = from[((b * ph + y) * pw + x) * p.c + c];
    }
  }
}

}  // namespace

template <typename T>
cudaError_t Transpose(const T* in, T* out, const Permutation& p, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  TransposeKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(in, out, p, n);
  return LaunchError();
}

template <typename T>
cudaError_t NhwcToNchw(const T* in, T* out, int64_t images, int64_t pixels, int64_t channels, cudaStream_t stream) {
  return BatchedTranspose<T, false>(in, nullptr, false, out, images, pixels, channels, stream);
}

template <typename T>
cudaError_t NchwToNhwc(const T* in, const T* bias, bool relu, T* out, int64_t images, int64_t pixels, int64_t channels,
                       cudaStream_t stream) {
  if (bias == nullptr && !relu) return BatchedTranspose<T, false>(in, nullptr, false, out, images, channels, pixels, stream);
  return BatchedTranspose<T, true>(in, bias, relu, out, images, channels, pixels, stream);
}

template <typename T>
cudaError_t PadNhwc(const T* in, T* padded, const NhwcPadding& p, cudaStream_t stream) {
  const int64_t n = p.n * (p.h + p.bottom) * (p.w + p.right) * p.c;
  if (n == 0) return cudaSuccess;
  PadOrCropKernel<T, true><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(in, padded, p, n);
  return LaunchError();
}

template <typename T>
cudaError_t CropNhwc(const T* padded, T* out, const NhwcPadding& p, cudaStream_t stream) {
  const int64_t n = p.n * p.h * p.w * p.c;
  if (n == 0) return cudaSuccess;
  PadOrCropKernel<T, false><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(padded, out, p, n);
  return LaunchError();
}

#define TESSERA_INSTANTIATE(T)                                                                   \
  template cudaError_t Transpose<T>(const T*, T*, const Permutation&, int64_t, cudaStream_t);    \
  template cudaError_t NhwcToNchw<T>(const T*, T*, int64_t, int64_t, int64_t, cudaStream_t);       \
  template cudaError_t NchwToNhwc<T>(const T*, const T*, bool, T*, int64_t, int64_t, int64_t, cudaStream_t); \
  template cudaError_t PadNhwc<T>(const T*, T*, const NhwcPadding&, cudaStream_t);               \
  template cudaError_t CropNhwc<T>(const T*, T*, const NhwcPadding&, cudaStream_t);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
#undef TESSERA_INSTANTIATE

}  // namespace tessera::gpu
