// RandomUniform, RandomStandardNormal and TruncatedNormal on the GPU: Philox4x32-10
// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"), one counter per element,
// so every thread draws independently and a call is reproducible from (key, offset).
#include <cmath>

#include "devices/gpu/cuda_launch_util.cuh"
#include "devices/gpu/launch.h"

namespace tessera::gpu {
namespace {

struct Words {
  uint32_t w[4];
};

__device__ Words Philox(uint64_t key, uint64_t counter, uint32_t attempt) {
  constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = attempt, c3 = 0;
  for (int round = 0; round < 10; ++round) {
    const uint32_t lo0 = kMul0 * c0, hi0 = __umulhi(kMul0, c0);
    const uint32_t lo1 = kMul1 * c2, hi1 = __umulhi(kMul1, c2);
    c0 = hi1 ^ c1 ^ k0, c1 = lo1, c2 = hi0 ^ c3 ^ k1, c3 = lo0;
    k0 += kWeyl0, k1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in [0, 1), or in (0, 1] for a logarithm's argument.
template <typename T>
__device__ T Uniform(const Words& r, int first, bool exclude_zero);
template <>
__device__ float Uniform<float>(const Words& r, int first, bool exclude_zero) {
  return ((r.w[first] >> 8) + (exclude_zero ? 1 : 0)) * 0x1p-24f;
}
template <>
__device__ double Uniform<double>(const Words& r, int first, bool exclude_zero) {
  const uint64_t bits = (uint64_t{r.w[first]} << 32) | r.w[first + 1];
  return ((bits >> 11) + (exclude_zero ? 1 : 0)) * 0x1p-53;
}

// Box-Muller on two uniforms from words 0..1 (float) or 0..3 (double).
template <typename T>
__device__ T Normal(const Words& r) {
  const int second = sizeof(T) == 4 ? 1 : 2;
  const T radius = sqrt(T(-2) * log(Uniform<T>(r, 0, true)));
  return radius * cospi(T(2) * Uniform<T>(r, second, false));
}

template <typename T>
__global__ void RandomKernel(RandomDistribution dist, uint64_t key, uint64_t offset, T* out, int64_t n) {
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    const uint64_t counter = offset + static_cast<uint64_t>(i);
    if (dist == RandomDistribution::kUniform) {
      out[i] = Uniform<T>(Philox(key, counter, 0), 0, false);
      continue;
    }
    T v = Normal<T>(Philox(key, counter, 0));
    // TensorFlow's truncation: values beyond two standard deviations are drawn again, from
    // the element's next counter block. Past 100 redraws (p < 0.046^100) the bound is kept.
    for (uint32_t attempt = 1; dist == RandomDistribution::kTruncatedNormal && (v < -2 || v > 2); ++attempt) {
      v = attempt < 100 ? Normal<T>(Philox(key, counter, attempt)) : (v < 0 ? T(-2) : T(2));
    }
    out[i] = v;
  }
}

}  // namespace

template <typename T>
cudaError_t Random(RandomDistribution dist, uint64_t key, uint64_t offset, T* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  RandomKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(dist, key, offset, out, n);
  return LaunchError();
}

template cudaError_t Random<float>(RandomDistribution, uint64_t, uint64_t, float*, int64_t, cudaStream_t);
template cudaError_t Random<double>(RandomDistribution, uint64_t, uint64_t, double*, int64_t, cudaStream_t);

}  // namespace tessera::gpu
