// Reductions, ArgMax, Softmax and the sparse softmax cross-entropy.
#include <cfloat>
#include <cmath>

#include "devices/gpu/cuda_launch_util.cuh"
#include "devices/gpu/launch.h"

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

__device__ inline double Combine(ReduceFn fn, double acc, double x) {
  return fn == ReduceFn::kMax ? (x > acc ? x : acc) : fn == ReduceFn::kMin ? (x < acc ? x : acc) : acc + x;
}

__device__ inline double IdentityOf(ReduceFn fn) {
  return fn == ReduceFn::kMax ? -INFINITY : fn == ReduceFn::kMin ? INFINITY : 0.0;
}

// A pass cuts the reduced dimension into `splits` chunks of `chunk` elements and writes one
// value per (outer, split, inner): a partial result for the next pass, or, with one split,
// the reduction (a Mean divided by `divisor`, the count of the whole reduction).

// Contiguous elements (inner == 1): one block per (row, split).
template <typename In, typename Out>
__global__ void ReduceRowsKernel(ReduceFn fn, const In* in, Out* out, int64_t reduced, int64_t splits, int64_t chunk,
                                 double divisor) {
  __shared__ double shared[kThreadsPerBlock];
  const int64_t row = blockIdx.x / splits, part = blockIdx.x % splits;
  const In* p = in + row * reduced;
  const int64_t end = min(reduced, (part + 1) * chunk);
  double acc = IdentityOf(fn);
  for (int64_t j = part * chunk + threadIdx.x; j < end; j += blockDim.x) acc = Combine(fn, acc, static_cast<double>(p[j]));
  if (fn == ReduceFn::kMax) {
    acc = BlockReduce(acc, MaxOp(), shared);
  } else if (fn == ReduceFn::kMin) {
    acc = BlockReduce(acc, MinOp(), shared);
  } else {
    acc = BlockReduce(acc, SumOp(), shared);
  }
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<Out>(fn == ReduceFn::kMean ? acc / divisor : acc);
}

// Strided elements: one thread per (outer, split, inner); neighbouring threads read
// neighbouring inner elements.
template <typename In, typename Out>
__global__ void ReduceColumnsKernel(ReduceFn fn, const In* in, Out* out, int64_t outer, int64_t reduced, int64_t inner,
                                    int64_t splits, int64_t chunk, double divisor) {
  TESSERA_GRID_STRIDE_LOOP(o, outer * splits * inner) {
    const int64_t i = o % inner, part = (o / inner) % splits, row = o / (inner * splits);
    const In* base = in + row * reduced * inner + i;
    const int64_t end = min(reduced, (part + 1) * chunk);
    double acc = IdentityOf(fn);
    for (int64_t j = part * chunk; j < end; ++j) acc = Combine(fn, acc, static_cast<double>(base[j * inner]));
    out[o] = static_cast<Out>(fn == ReduceFn::kMean ? acc / divisor : acc);
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


// How many chunks a pass cuts the reduced dimension into: enough to keep the GPU's
// multiprocessors busy when there are few outputs, never chunks too small to be worth a
// block (rows) or a thread (columns).
int64_t SplitsFor(int64_t outer, int64_t reduced, int64_t inner) {
  constexpr int64_t kTargetBlocks = 1024, kMinPerBlock = kThreadsPerBlock * 8;
  constexpr int64_t kTargetThreads = int64_t{1} << 16, kMinPerThread = 16;
  const int64_t outputs = outer * inner;
  const int64_t wanted = inner == 1 ? (kTargetBlocks + outer - 1) / outer : (kTargetThreads + outputs - 1) / outputs;
  const int64_t most = inner == 1 ? (reduced + kMinPerBlock - 1) / kMinPerBlock : (reduced + kMinPerThread - 1) / kMinPerThread;
  return std::max<int64_t>(1, std::min(wanted, most));
}

template <typename In, typename Out>
cudaError_t Pass(ReduceFn fn, const In* in, Out* out, int64_t outer, int64_t reduced, int64_t inner, int64_t splits,
                 double divisor, cudaStream_t stream) {
  const int64_t chunk = (reduced + splits - 1) / splits;
  if (inner == 1 && outer * splits <= kMaxRows) {
    ReduceRowsKernel<In, Out><<<static_cast<unsigned>(outer * splits), kThreadsPerBlock, 0, stream>>>(
        fn, in, out, reduced, splits, chunk, divisor);
  } else {
    ReduceColumnsKernel<In, Out><<<BlocksFor(outer * splits * inner), kThreadsPerBlock, 0, stream>>>(
        fn, in, out, outer, reduced, inner, splits, chunk, divisor);
  }
  return LaunchError();
}

}  // namespace

size_t ReduceScratchBytes(int64_t outer, int64_t reduced, int64_t inner) {
  if (outer * inner == 0 || reduced == 0) return 0;
  size_t values = 0;
  for (int64_t splits = SplitsFor(outer, reduced, inner); splits > 1; splits = SplitsFor(outer, reduced, inner)) {
    values += static_cast<size_t>(outer * splits * inner);
    reduced = splits;
  }
  return values * sizeof(double);
}

template <typename T>
cudaError_t Reduce(ReduceFn fn, const T* in, T* out, int64_t outer, int64_t reduced, int64_t inner, void* scratch,
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
  const double divisor = static_cast<double>(reduced);
  int64_t splits = SplitsFor(outer, reduced, inner);
  if (splits == 1) return Pass(fn, in, out, outer, reduced, inner, 1, divisor, stream);
  // Partial results in double, pass after pass, until one pass finishes the reduction.
  double* partial = static_cast<double*>(scratch);
  cudaError_t e = Pass(fn, in, partial, outer, reduced, inner, splits, 1.0, stream);
  for (reduced = splits; e == cudaSuccess; reduced = splits) {
    splits = SplitsFor(outer, reduced, inner);
    if (splits == 1) return Pass(fn, static_cast<const double*>(partial), out, outer, reduced, inner, 1, divisor, stream);
    double* next = partial + outer * reduced * inner;
    e = Pass(fn, static_cast<const double*>(partial), next, outer, reduced, inner, splits, 1.0, stream);
    partial = next;
  }
  return e;
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
  template cudaError_t Reduce<T>(ReduceFn, const T*, T*, int64_t, int64_t, int64_t, void*, cudaStream_t); \
  template cudaError_t ArgMax<T, int64_t>(const T*, int64_t*, int64_t, int64_t, int64_t, cudaStream_t);  \
  template cudaError_t Softmax<T>(bool, const T*, T*, int64_t, int64_t, cudaStream_t);                   \
  template cudaError_t SparseSoftmaxXent<T, int32_t>(const T*, const int32_t*, T*, T*, int64_t, int64_t, \
                                                     cudaStream_t);                                      \
  template cudaError_t SparseSoftmaxXent<T, int64_t>(const T*, const int64_t*, T*, T*, int64_t, int64_t, cudaStream_t);
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
#undef TESSERA_INSTANTIATE

}  // namespace tessera::gpu
