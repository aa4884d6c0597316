// The device code of the GPU kernels, behind plain functions that enqueue it on a stream
// and return the launch's error. The OpKernels (devices/gpu/*_ops.cc, host C++) check
// inputs, allocate outputs and call these; the .cu files that define them see only this
// header, so nvcc never compiles the engine's headers. Instantiated for float and double.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/util/broadcast_plan.h"

namespace tessera::gpu {

enum class UnaryFn { kNeg, kSquare, kSqrt, kExp, kLog, kRelu };
template <typename T>
cudaError_t Unary(UnaryFn fn, const T* in, T* out, int64_t n, cudaStream_t stream);

// kReluGrad: a is the gradient, b the forward input.
enum class BinaryFn { kAdd, kSub, kMul, kDiv, kMaximum, kMinimum, kReluGrad };
enum class CompareFn { kEqual, kGreater, kLess };
template <typename T>
cudaError_t Binary(BinaryFn fn, const BroadcastPlan& plan, const T* a, const T* b, T* out, int64_t n,
                   cudaStream_t stream);
template <typename T>
cudaError_t Compare(CompareFn fn, const BroadcastPlan& plan, const T* a, const T* b, bool* out, int64_t n,
                    cudaStream_t stream);

// out = in repeated along the dimensions it broadcasts over (plan's operand a; b is unused).
template <typename T>
cudaError_t Broadcast(const BroadcastPlan& plan, const T* in, T* out, int64_t n, cudaStream_t stream);
template <typename T>
cudaError_t Fill(T* out, T value, int64_t n, cudaStream_t stream);
// float16 and bfloat16 as the device code sees them: their bits, laid out as graph/types.h's
// Half and BFloat16.
struct HalfBits {
  uint16_t bits;
};
struct BFloat16Bits {
  uint16_t bits;
};
// Between numeric types, bool and those two; through float where either is one, as the
// CPU's Cast rounds (to nearest, ties to even).
template <typename From, typename To>
cudaError_t Cast(const From* in, To* out, int64_t n, cudaStream_t stream);

// out = in + bias along the channel dimension of [..., channels, inner]: inner is 1 for
// NHWC, height * width for NCHW. With `relu`, negative sums become 0 (a fused BiasAdd, Relu).
template <typename T>
cudaError_t BiasAdd(const T* in, const T* bias, bool relu, T* out, int64_t n, int64_t channels, int64_t inner,
                    cudaStream_t stream);

// A reduction as TensorFlow's kernels see it after merging adjacent dimensions: the input
// is [outer, reduced, inner] and the output [outer, inner].
enum class ReduceFn { kSum, kMean, kMax, kMin };
// Few outputs over many elements take several passes, the first ones writing partial
// results to `scratch`, of ReduceScratchBytes (nullptr when that is 0).
size_t ReduceScratchBytes(int64_t outer, int64_t reduced, int64_t inner);
template <typename T>
cudaError_t Reduce(ReduceFn fn, const T* in, T* out, int64_t outer, int64_t reduced, int64_t inner, void* scratch,
                   cudaStream_t stream);
// The index of the largest value along the middle dimension; the first on ties.
template <typename T, typename Index>
cudaError_t ArgMax(const T* in, Index* out, int64_t outer, int64_t reduced, int64_t inner, cudaStream_t stream);

// Softmax or LogSoftmax over the last dimension of [rows, cols].
template <typename T>
cudaError_t Softmax(bool log, const T* logits, T* out, int64_t rows, int64_t cols, cudaStream_t stream);
// loss[r] and backprop[r, :] from logits[r, :] and labels[r]; a label outside [0, cols)
// gives NaN, as TensorFlow's GPU kernel does.
template <typename T, typename Label>
cudaError_t SparseSoftmaxXent(const T* logits, const Label* labels, T* loss, T* backprop, int64_t rows, int64_t cols,
                              cudaStream_t stream);

// The optimizers' updates, in place, with TensorFlow's formulas. Scalars (lr, momentum, ...)
// are read from device memory, so the host never waits for them.
template <typename T>
cudaError_t ApplyGradientDescent(T* var, const T* lr, const T* grad, int64_t n, cudaStream_t stream);
template <typename T>
cudaError_t ApplyMomentum(T* var, T* accum, const T* lr, const T* grad, const T* momentum, bool use_nesterov, int64_t n,
                          cudaStream_t stream);
template <typename T>
cudaError_t ApplyRMSProp(T* var, T* ms, T* mom, const T* lr, const T* rho, const T* momentum, const T* epsilon,
                         const T* grad, int64_t n, cudaStream_t stream);
template <typename T>
cudaError_t ApplyAdam(T* var, T* m, T* v, const T* beta1_power, const T* beta2_power, const T* lr, const T* beta1,
                      const T* beta2, const T* epsilon, const T* grad, bool use_nesterov, int64_t n,
                      cudaStream_t stream);

// out = in with its dimensions permuted: out's dimension i is in's dimension perm[i].
constexpr int kMaxTransposeRank = 8;
struct Permutation {
  int rank;
  int64_t in_dims[kMaxTransposeRank];
  int perm[kMaxTransposeRank];
};
template <typename T>
cudaError_t Transpose(const T* in, T* out, const Permutation& p, int64_t n, cudaStream_t stream);

// An NHWC image batch [n, h, w, c] and the rows and columns added below and to the right
// of it, which TensorFlow's SAME padding has where cuDNN's symmetric padding cannot.
struct NhwcPadding {
  int64_t n, h, w, c;
  int64_t bottom, right;
};
// padded [n, h + bottom, w + right, c] = in with zeros below and to the right.
// Between the channels-last layout of TensorFlow's tensors, [images, pixels, channels], and
// the channels-first one cuDNN is fastest with in float32, [images, channels, pixels]. On
// the way back, `bias` (channels values, or nullptr) is added and ReLU applied when `relu`.
template <typename T>
cudaError_t NhwcToNchw(const T* in, T* out, int64_t images, int64_t pixels, int64_t channels, cudaStream_t stream);
template <typename T>
cudaError_t NchwToNhwc(const T* in, const T* bias, bool relu, T* out, int64_t images, int64_t pixels, int64_t channels,
                       cudaStream_t stream);

template <typename T>
cudaError_t PadNhwc(const T* in, T* padded, const NhwcPadding& p, cudaStream_t stream);
// out [n, h, w, c] = the top-left part of padded.
template <typename T>
cudaError_t CropNhwc(const T* padded, T* out, const NhwcPadding& p, cudaStream_t stream);

// Where pooling windows fall over an NHWC input (kernels/util/conv_geometry.h's Geometry).
struct PoolWindows {
  int64_t n, h, w, c;
  int64_t kh, kw, sh, sw;
  int64_t oh, ow;
  int64_t pad_top, pad_left;
};
// MaxPool, or AvgPool over the window's cells inside the input.
template <typename T>
cudaError_t Pool(bool max, const T* in, T* out, const PoolWindows& g, cudaStream_t stream);
// Each window's gradient to the first of its maxima (row-major), as on the CPU.
template <typename T>
cudaError_t MaxPoolGrad(const T* in, const T* grad, T* d_in, const PoolWindows& g, cudaStream_t stream);
template <typename T>
cudaError_t AvgPoolGrad(const T* grad, T* d_in, const PoolWindows& g, cudaStream_t stream);

// One reduce step of an all-reduce between GPUs (kernels/collectives/ring_schedule.h), with the CPU
// ring's arithmetic: out = mine (fn) theirs, theirs rounded through float16 first when it
// crossed the wire as float16 (kMean adds). With `finish`, the chunk's owner then divides
// by `members` (kMean) and rounds through float16 (`wire_float16`), so every copy of the
// result gets the same bits. `theirs` may be null: out = mine, then finished (after NCCL's
// sum). Instantiated for float and double.
template <typename T>
cudaError_t AllReduceStep(ReduceFn fn, const T* mine, const T* theirs, T* out, int64_t n, bool wire_float16,
                          bool finish, int members, cudaStream_t stream);

// Counter-based random numbers (Philox4x32-10): element i of a call with `offset` is drawn
// from counter (offset + i), so a kernel that advances its offset by what it drew gives new
// numbers every step, and the same sequence for the same key.
enum class RandomDistribution { kUniform, kNormal, kTruncatedNormal };
template <typename T>
cudaError_t Random(RandomDistribution dist, uint64_t key, uint64_t offset, T* out, int64_t n, cudaStream_t stream);

}  // namespace tessera::gpu
