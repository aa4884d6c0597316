// Element-wise device code: unary math, binary ops and comparisons with broadcasting, fill,
// cast and bias add.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "devices/gpu/cuda_launch_util.cuh"
#include "devices/gpu/launch.h"

namespace tessera::gpu {
namespace {

template <typename T>
__device__ T ApplyUnary(UnaryFn fn, T x) {
  switch (fn) {
    case UnaryFn::kNeg:
      return -x;
    case UnaryFn::kSquare:
      return x * x;
    case UnaryFn::kSqrt:
      return sqrt(x);
    case UnaryFn::kExp:
      return exp(x);
    case UnaryFn::kLog:
      return log(x);
    case UnaryFn::kRelu:
      return x > T(0) ? x : T(0);
  }
  return x;
}

template <typename T>
__device__ T ApplyBinary(BinaryFn fn, T x, T y) {
  switch (fn) {
    case BinaryFn::kAdd:
      return x + y;
    case BinaryFn::kSub:
      return x - y;
    case BinaryFn::kMul:
      return x * y;
    case BinaryFn::kDiv:
      return x / y;
    // As the CPU kernels: a NaN x gives y.
    case BinaryFn::kMaximum:
      return x > y ? x : y;
    case BinaryFn::kMinimum:
      return x < y ? x : y;
    case BinaryFn::kReluGrad:
      return y > T(0) ? x : T(0);
  }
  return x;
}

template <typename T>
__device__ bool ApplyCompare(CompareFn fn, T x, T y) {
  switch (fn) {
    case CompareFn::kEqual:
      return x == y;
    case CompareFn::kGreater:
      return x > y;
    case CompareFn::kLess:
      return x < y;
  }
  return false;
}

// Offsets of output element i in the two operands.
__device__ inline void Offsets(const BroadcastPlan& p, int64_t i, int64_t* a, int64_t* b) {
  int64_t oa = 0, ob = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t idx = i % p.dims[d];
    i /= p.dims[d];
    oa += idx * p.a_stride[d];
    ob += idx * p.b_stride[d];
  }
  *a = oa;
  *b = ob;
}

template <typename T>
__global__ void UnaryKernel(UnaryFn fn, const T* in, T* out, int64_t n) {
  TESSERA_GRID_STRIDE_LOOP(i, n) { out[i] = ApplyUnary(fn, in[i]); }
}

template <typename T>
__global__ void SameShapeBinaryKernel(BinaryFn fn, const T* a, const T* b, T* out, int64_t n) {
  TESSERA_GRID_STRIDE_LOOP(i, n) { out[i] = ApplyBinary(fn, a[i], b[i]); }
}

// out[i] = f(a, b) at output element i's offsets in the operands.
template <typename T, typename Out, typename F>
__global__ void BroadcastKernel(F f, BroadcastPlan plan, const T* a, const T* b, Out* out, int64_t n) {
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    int64_t oa, ob;
    Offsets(plan, i, &oa, &ob);
    out[i] = f(a[oa], b[ob]);
  }
}

template <typename T>
struct BinaryFunctor {
  BinaryFn fn;
  __device__ T operator()(T x, T y) const { return ApplyBinary(fn, x, y); }
};

template <typename T>
struct CompareFunctor {
  CompareFn fn;
  __device__ bool operator()(T x, T y) const { return ApplyCompare(fn, x, y); }
};

template <typename T>
struct FirstFunctor {
  __device__ T operator()(T x, T) const { return x; }
};

template <typename T>
__global__ void FillKernel(T* out, T value, int64_t n) {
  TESSERA_GRID_STRIDE_LOOP(i, n) { out[i] = value; }
}

template <typename T>
__device__ float AsFloat(T v) {
  if constexpr (std::is_same_v<T, HalfBits>) {
    return __half2float(__ushort_as_half(v.bits));
  } else if constexpr (std::is_same_v<T, BFloat16Bits>) {
    return __bfloat162float(__ushort_as_bfloat16(v.bits));
  } else {
    return static_cast<float>(v);
  }
}

template <typename T>
constexpr bool kReduced = std::is_same_v<T, HalfBits> || std::is_same_v<T, BFloat16Bits>;

template <typename To, typename From>
__device__ To Convert(From v) {
  if constexpr (std::is_same_v<To, HalfBits>) {
    return HalfBits{__half_as_ushort(__float2half_rn(AsFloat(v)))};
  } else if constexpr (std::is_same_v<To, BFloat16Bits>) {
    return BFloat16Bits{__bfloat16_as_ushort(__float2bfloat16_rn(AsFloat(v)))};
  } else if constexpr (kReduced<From>) {
    return static_cast<To>(AsFloat(v));
  } else {
    return static_cast<To>(v);
  }
}

template <typename From, typename To>
__global__ void CastKernel(const From* in, To* out, int64_t n) {
  TESSERA_GRID_STRIDE_LOOP(i, n) { out[i] = Convert<To>(in[i]); }
}

template <typename T>
__global__ void BiasAddKernel(const T* in, const T* bias, bool relu, T* out, int64_t n, int64_t channels,
                              int64_t inner) {
  TESSERA_GRID_STRIDE_LOOP(i, n) {
    const T v = in[i] + bias[(i / inner) % channels];
    out[i] = relu && v < T(0) ? T(0) : v;
  }
}

bool SameShape(const BroadcastPlan& p) { return p.rank == 1 && p.a_stride[0] == 1 && p.b_stride[0] == 1; }

}  // namespace

template <typename T>
cudaError_t Unary(UnaryFn fn, const T* in, T* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  UnaryKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(fn, in, out, n);
  return LaunchError();
}

template <typename T>
cudaError_t Binary(BinaryFn fn, const BroadcastPlan& plan, const T* a, const T* b, T* out, int64_t n,
                   cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (SameShape(plan)) {
    SameShapeBinaryKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(fn, a, b, out, n);
  } else {
    BroadcastKernel<T, T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(BinaryFunctor<T>{fn}, plan, a, b, out, n);
  }
  return LaunchError();
}

template <typename T>
cudaError_t Compare(CompareFn fn, const BroadcastPlan& plan, const T* a, const T* b, bool* out, int64_t n,
                    cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  BroadcastKernel<T, bool><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(CompareFunctor<T>{fn}, plan, a, b, out, n);
  return LaunchError();
}

template <typename T>
cudaError_t Broadcast(const BroadcastPlan& plan, const T* in, T* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  BroadcastKernel<T, T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(FirstFunctor<T>{}, plan, in, in, out, n);
  return LaunchError();
}

template <typename T>
cudaError_t Fill(T* out, T value, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FillKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(out, value, n);
  return LaunchError();
}

template <typename From, typename To>
cudaError_t Cast(const From* in, To* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  CastKernel<From, To><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(in, out, n);
  return LaunchError();
}

template <typename T>
cudaError_t BiasAdd(const T* in, const T* bias, bool relu, T* out, int64_t n, int64_t channels, int64_t inner,
                    cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  BiasAddKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(in, bias, relu, out, n, channels, inner);
  return LaunchError();
}

#define TESSERA_INSTANTIATE(T)                                                                                        \
  template cudaError_t Unary<T>(UnaryFn, const T*, T*, int64_t, cudaStream_t);                                        \
  template cudaError_t Binary<T>(BinaryFn, const BroadcastPlan&, const T*, const T*, T*, int64_t, cudaStream_t);      \
  template cudaError_t Compare<T>(CompareFn, const BroadcastPlan&, const T*, const T*, bool*, int64_t, cudaStream_t); \
  template cudaError_t Broadcast<T>(const BroadcastPlan&, const T*, T*, int64_t, cudaStream_t);                      \
  template cudaError_t Fill<T>(T*, T, int64_t, cudaStream_t);                                                         \
  template cudaError_t BiasAdd<T>(const T*, const T*, bool, T*, int64_t, int64_t, int64_t, cudaStream_t);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
#undef TESSERA_INSTANTIATE

#define TESSERA_INSTANTIATE_CAST(From, To) template cudaError_t Cast<From, To>(const From*, To*, int64_t, cudaStream_t);
#define TESSERA_INSTANTIATE_CASTS_FROM(From) \
  TESSERA_INSTANTIATE_CAST(From, float)      \
  TESSERA_INSTANTIATE_CAST(From, double)     \
  TESSERA_INSTANTIATE_CAST(From, int64_t)    \
  TESSERA_INSTANTIATE_CAST(From, HalfBits)   \
  TESSERA_INSTANTIATE_CAST(From, BFloat16Bits)
TESSERA_INSTANTIATE_CASTS_FROM(float)
TESSERA_INSTANTIATE_CASTS_FROM(double)
TESSERA_INSTANTIATE_CASTS_FROM(int64_t)
TESSERA_INSTANTIATE_CASTS_FROM(int32_t)
TESSERA_INSTANTIATE_CASTS_FROM(bool)
TESSERA_INSTANTIATE_CASTS_FROM(uint8_t)
TESSERA_INSTANTIATE_CASTS_FROM(HalfBits)
TESSERA_INSTANTIATE_CASTS_FROM(BFloat16Bits)
#undef TESSERA_INSTANTIATE_CASTS_FROM
#undef TESSERA_INSTANTIATE_CAST

}  // namespace tessera::gpu
