// Reductions, ArgMax, Softmax and the sparse softmax cross-entropy.
#include <cfloat>
#include <cmath>

#include "kernels/gpu/cuda_launch_util.cuh"
#include "kernels/gpu/launch.h"

namespace tessera::gpu {
namespace {

// float sums accumulate in double, as the CPU kernels do: the sum of 2^25 ones is exact.
template <typename T>
struct Accumulator {
  using type = double;
};

template <typename T>
__device__ T Lowest() {
  return -INFINITY;
}

// Combines one value per thread of the block into thread 0's result; every thread of the
// block must call it. `shared` holds kThreadsPerBlock values.
template <typename A, typename Op>
__device__ A BlockReduce(A value, Op op, A* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int width = kThreadsPerBlock / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + width]);
    __syncthreads();
  }
  A result = shared[0];
  __syncthreads();  // shared may be reused by the caller's next BlockReduce
  return result;
}

struct SumOp {
  template <typename A>
  __device__ A operator()(A x, A y) const {
    return x + y;
  }
};
struct MaxOp {
  template <typename A>
  __device__ A operator()(A x, A y) const {
    return x > y ? x : y;
  }
};
struct MinOp {
  template <typename A>
  __device__ A operator()(A x, A y) const {
    return x < y ? x : y;
  }
};

// One block per output row when the reduced elements are contiguous (inner == 1).
template <typename T>
__global__ void ReduceRowsKernel(ReduceFn fn, const T* in, T* out, int64_t reduced) {
  using A = typename Accumulator<T>::type;
  __shared__ A shared[kThreadsPerBlock];
  const T* row = in + blockIdx.x * reduced;
  A acc = fn == ReduceFn::kMax ? A(Lowest<T>()) : fn == ReduceFn::kMin ? A(-Lowest<T>()) : A(0);
  for (int64_t j = threadIdx.x; j < reduced; j += blockDim.x) {
    const A x = row[j];
    acc = fn == ReduceFn::kMax ? (x > acc ? x : acc) : fn == ReduceFn::kMin ? (x < acc ? x : acc) : acc + x;
  }
  if (fn == ReduceFn::kMax) {
    acc = BlockReduce(acc, MaxOp(), shared);
  } else if (fn == ReduceFn::kMin) {
    acc = BlockReduce(acc, MinOp(), shared);
  } else {
    acc = BlockReduce(acc, SumOp(), shared);
  }
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<T>(fn == ReduceFn::kMean ? acc / A(reduced) : acc);
}

// One thread per output otherwise: neighbouring threads read neighbouring inner elements.
template <typename T>
__global__ void ReduceColumnsKernel(ReduceFn fn, const T* in, T* out, int64_t outer, int64_t reduced, int64_t inner) {
  using A = typename Accumulator<T>::type;
  TESSERA_GRID_STRIDE_LOOP(o, outer * inner) {
    const T* base = in + (o / inner) * reduced * inner + o % inner;
    A acc = fn == ReduceFn::kMax ? A(Lowest<T>()) : fn == ReduceFn::kMin ? A(-Lowest<T>()) : A(0);
    for (int64_t j = 0; j < reduced; ++j) {
      const A x = base[j * inner];
      acc = fn == ReduceFn::kMax ? (x > acc ? x : acc) : fn == ReduceFn::kMin ? (x < acc ? x : acc) : acc + x;
    }
    out[o] = static_cast<T>(fn == ReduceFn::kMean ? acc / A(reduced) : acc);
  }
}

template <typename T, typename Index>
__global__ void ArgMaxKernel(const T* in, Index* out, int64_t outer, int64_t reduced, int64_t inner) {
  TESSERA_GRID_STRIDE_LOOP(o, outer * inner) {
    const T* base = in + (o / inner) * reduced * inner + o % inner;
    int64_t best = 0;
    T best_value = base[0];
    for (int64_t j = 1; j < reduced; ++j) {
      const T x = base[j * inner];
      if (x > best_value) {  // ties keep the first, as TensorFlow
        best = j;
        best_value = x;
      }
    }
    out[o] = static_cast<Index>(best);
  }
}

// The largest value of a row and the sum of exp(x - max) over it, for the whole block.
template <typename T, typename A>
__device__ void RowExpStats(const T* row, int64_t cols, A* shared, A* max_value, A* sum) {
  A m = Lowest<T>();
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = max(m, A(row[j]));
  m = BlockReduce(m, MaxOp(), shared);
  A s = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += exp(A(row[j]) - m);
  *max_value = m;
  *sum = BlockReduce(s, SumOp(), shared);
}

template <typename T>
__global__ void SoftmaxKernel(bool log_softmax, const T* logits, T* out, int64_t cols) {
  using A = typename Accumulator<T>::type;
  __shared__ A shared[kThreadsPerBlock];
  const T* row = logits + blockIdx.x * cols;
  T* out_row = out + blockIdx.x * cols;
  A max_value, sum;
  RowExpStats(row, cols, shared, &max_value, &sum);
  const A log_sum = log(sum);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const A shifted = A(row[j]) - max_value;
    out_row[j] = static_cast<T>(log_softmax ? shifted - log_sum : exp(shifted) / sum);
  }
}

template <typename T, typename Label>
__global__ void SparseSoftmaxXentKernel(const T* logits, const Label* labels, T* loss, T* backprop, int64_t cols) {
  using A = typename Accumulator<T>::type;
  __shared__ A shared[kThreadsPerBlock];
  const T* row = logits + blockIdx.x * cols;
  T* grad_row = backprop + blockIdx.x * cols;
  const Label label = labels[blockIdx.x];
  const bool valid = label >= 0 && static_cast<int64_t>(label) < cols;
  A max_value, sum;
  RowExpStats(row, cols, shared, &max_value, &sum);
  const A log_sum = log(sum);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const A probability = exp(A(row[j]) - max_value) / sum;
    grad_row[j] = valid ? static_cast<T>(probability - (j == static_cast<int64_t>(label) ? A(1) : A(0))) : T(NAN);
  }
  if (threadIdx.x == 0) {
    loss[blockIdx.x] = valid ? static_cast<T>(log_sum - (A(row[label]) - max_value)) : T(NAN);
  }
}

// Grid dimension x holds up to 2^31-1 blocks: one per row.
constexpr int64_t kMaxRows = 2147483647;

}  // namespace

template <typename T>
cudaError_t Reduce(ReduceFn fn, const T* in, T* out, int64_t outer, int64_t reduced, int64_t inner,
                   cudaStream_t stream) {
  const int64_t outputs = outer * inner;
  if (outputs == 0) return cudaSuccess;
  if (reduced == 0) {
    // Nothing to reduce: the identity of the reduction (Mean of nothing is NaN, as 0/0).
    const T identity = fn == ReduceFn::kMax    ? T(-INFINITY)
                       : fn == ReduceFn::kMin  ? T(INFINITY)
                       : fn == ReduceFn::kMean ? T(NAN)
                                               : T(0);
    return Fill(out, identity, outputs, stream);
  }
  if (inner == 1 && outer <= kMaxRows) {
    ReduceRowsKernel<T><<<static_cast<unsigned>(outer), kThreadsPerBlock, 0, stream>>>(fn, in, out, reduced);
  } else {
    ReduceColumnsKernel<T><<<BlocksFor(outputs), kThreadsPerBlock, 0, stream>>>(fn, in, out, outer, reduced, inner);
  }
  return LaunchError();
}

template <typename T, typename Index>
cudaError_t ArgMax(const T* in, Index* out, int64_t outer, int64_t reduced, int64_t inner, cudaStream_t stream) {
  const int64_t outputs = outer * inner;
  if (outputs == 0) return cudaSuccess;
  ArgMaxKernel<T, Index><<<BlocksFor(outputs), kThreadsPerBlock, 0, stream>>>(in, out, outer, reduced, inner);
  return LaunchError();
}

template <typename T>
cudaError_t Softmax(bool log, const T* logits, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > kMaxRows) return cudaErrorInvalidConfiguration;
  SoftmaxKernel<T><<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(log, logits, out, cols);
  return LaunchError();
}

template <typename T, typename Label>
cudaError_t SparseSoftmaxXent(const T* logits, const Label* labels, T* loss, T* backprop, int64_t rows, int64_t cols,
                              cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (rows > kMaxRows) return cudaErrorInvalidConfiguration;
  SparseSoftmaxXentKernel<T, Label>
      <<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(logits, labels, loss, backprop, cols);
  return LaunchError();
}

#define TESSERA_INSTANTIATE(T)                                                                           \
  template cudaError_t Reduce<T>(ReduceFn, const T*, T*, int64_t, int64_t, int64_t, cudaStream_t);       \
  template cudaError_t ArgMax<T, int64_t>(const T*, int64_t*, int64_t, int64_t, int64_t, cudaStream_t);  \
  template cudaError_t Softmax<T>(bool, const T*, T*, int64_t, int64_t, cudaStream_t);                   \
  template cudaError_t SparseSoftmaxXent<T, int32_t>(const T*, const int32_t*, T*, T*, int64_t, int64_t, \
                                                     cudaStream_t);                                      \
  template cudaError_t SparseSoftmaxXent<T, int64_t>(const T*, const int64_t*, T*, T*, int64_t, int64_t, cudaStream_t);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
#undef TESSERA_INSTANTIATE

}  // namespace tessera::gpu
