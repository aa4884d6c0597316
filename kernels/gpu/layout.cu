// Transpose, and the padding and cropping that adapt TensorFlow's SAME padding to cuDNN.
#include "kernels/gpu/cuda_launch_util.cuh"
#include "kernels/gpu/launch.h"

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
  template cudaError_t PadNhwc<T>(const T*, T*, const NhwcPadding&, cudaStream_t);               \
  template cudaError_t CropNhwc<T>(const T*, T*, const NhwcPadding&, cudaStream_t);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
#undef TESSERA_INSTANTIATE

}  // namespace tessera::gpu
