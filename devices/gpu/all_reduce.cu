// The reduce step of the all-reduce between GPUs, with kernels/ring_all_reduce.cc's arithmetic.
#include <cuda_fp16.h>

#include "devices/gpu/cuda_launch_util.cuh"
#include "devices/gpu/launch.h"

namespace tessera::gpu {
namespace {

template <typename T>
__device__ T ThroughFloat16(T x) {
  return static_cast<T>(__half2float(__float2half_rn(static_cast<float>(x))));
}

template <typename T>
__device__ T Combine(ReduceFn fn, T a, T b) {
  switch (fn) {
    case ReduceFn::kMax:  // std::max and std::min, as the CPU ring: the same NaN handling
      return a < b ? b : a;
    case ReduceFn::kMin:
      return b < a ? b : a;
    default:
      return a + b;
  }
}

template <typename T>
__global__ void AllReduceStepKernel(ReduceFn fn, const T* mine, const T* theirs, T* out, int64_t n,
                                    bool wire_float16, bool finish, int members) {
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    T v = mine[i];
    if (theirs != nullptr) v = Combine(fn, v, wire_float16 ? ThroughFloat16(theirs[i]) : theirs[i]);
    if (finish) {
      if (fn == ReduceFn::kMean) v = static_cast<T>(v / static_cast<T>(members));
      if (wire_float16) v = ThroughFloat16(v);
    }
    out[i] = v;
  }
}

}  // namespace

template <typename T>
cudaError_t AllReduceStep(ReduceFn fn, const T* mine, const T* theirs, T* out, int64_t n, bool wire_float16,
                          bool finish, int members, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AllReduceStepKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(fn, mine, theirs, out, n, wire_float16,
                                                                         finish, members);
  return LaunchError();
}

template cudaError_t AllReduceStep<float>(ReduceFn, const float*, const float*, float*, int64_t, bool, bool, int,
                                          cudaStream_t);
template cudaError_t AllReduceStep<double>(ReduceFn, const double*, const double*, double*, int64_t, bool, bool, int,
                                           cudaStream_t);

}  // namespace tessera::gpu
