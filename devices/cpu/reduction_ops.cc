// Sum, Mean, Max, Min and Prod over any set of axes, with keep_dims, and ArgMax.
//
// Each reduced group of the ReductionPlan is folded with one [outer, reduced, inner] pass,
// innermost group first.
#include <limits>
#include <vector>

#include "devices/cpu/cpu_kernels.h"
#include "devices/cpu/sum_accumulator.h"
#include "kernels/util/reduction_plan.h"

namespace tessera::cpu {
namespace {

// The maximum of nothing is -inf where the type has one, as in TensorFlow.
template <typename T>
struct MaxAcc {
  T max = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  void Add(T x) { max = x > max ? x : max; }
  T Get() const { return max; }
};

template <typename T>
struct MinAcc {
  T min = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  void Add(T x) { min = x < min ? x : min; }
  T Get() const { return min; }
};

template <typename T>
struct ProdAcc {
  T prod = T(1);
  void Add(T x) { prod *= x; }
  T Get() const { return prod; }
};

// ReduceMiddle over a short innermost dimension (a blocked layout's 8 or 16 channels,
// runtime/blocked_layout.h): each output block sums whole runs of N in accumulators held
// in registers, rather than walking N elements per row through the general loop.
template <typename T, typename Acc, int64_t N>
void ReduceMiddleShort(OpKernelContext* ctx, const T* in, T* out, int64_t outer, int64_t r) {
  ctx->ParallelFor(outer, r * N, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      Acc acc[N];
      const T* src = in + o * r * N;
      for (int64_t j = 0; j < r; ++j, src += N) {
        for (int64_t i = 0; i < N; ++i) acc[i].Add(src[i]);
      }
      for (int64_t i = 0; i < N; ++i) out[o * N + i] = acc[i].Get();
    }
  });
}

// in: [outer, r, inner] -> out: [outer, inner]
template <typename T, typename Acc>
void ReduceMiddle(OpKernelContext* ctx, const T* in, T* out, int64_t outer, int64_t r, int64_t inner) {
  if (inner == 8) return ReduceMiddleShort<T, Acc, 8>(ctx, in, out, outer, r);
  if (inner == 16) return ReduceMiddleShort<T, Acc, 16>(ctx, in, out, outer, r);
  ctx->ParallelFor(outer * inner, r, [&](int64_t begin, int64_t end) {
    if (inner == 1) {
      for (int64_t o = begin; o < end; ++o) {
        const T* row = in + o * r;
        Acc acc;
        for (int64_t j = 0; j < r; ++j) acc.Add(row[j]);
        out[o] = acc.Get();
      }
      return;
    }
    // Elements [begin, end) of the output, walked by (o, i) with the reduced axis outermost
    // within each o so the inner loop runs along contiguous memory.
    std::vector<Acc> acc;
    int64_t idx = begin;
    while (idx < end) {
      int64_t o = idx / inner, i0 = idx % inner;
      int64_t i1 = std::min(inner, i0 + (end - idx));
      acc.assign(static_cast<size_t>(i1 - i0), Acc());
      for (int64_t j = 0; j < r; ++j) {
        const T* src = in + (o * r + j) * inner + i0;
        for (int64_t i = 0; i < i1 - i0; ++i) acc[i].Add(src[i]);
      }
      T* dst = out + o * inner + i0;
      for (int64_t i = 0; i < i1 - i0; ++i) dst[i] = acc[i].Get();
      idx += i1 - i0;
    }
  });
}

enum class Kind { kSum, kMean, kMax, kMin, kProd };

template <typename T, Kind kKind>
using AccumulatorFor =
    std::conditional_t<kKind == Kind::kMax, MaxAcc<T>,
                       std::conditional_t<kKind == Kind::kMin, MinAcc<T>,
                                          std::conditional_t<kKind == Kind::kProd, ProdAcc<T>, SumAccumulator<T>>>>;

template <typename T, Kind kKind>
class ReductionOp : public OpKernel {
 public:
  explicit ReductionOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("keep_dims", &keep_dims_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    StatusOr<ReductionPlan> plan = MakeReductionPlan(in.shape(), ctx->input(1), keep_dims_);
    OP_REQUIRES_OK(ctx, plan.status());
    const TensorShape& out_shape = plan->out_shape;
    const int64_t reduced_count = plan->reduced_count;
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out->NumElements() == 0) return;
    if (reduced_count == 0) {
      // The reduction of nothing: 0, 1, -inf or +inf; a mean of nothing is NaN (0 for ints).
      T empty = AccumulatorFor<T, kKind>().Get();
      if constexpr (kKind == Kind::kMean && std::is_floating_point_v<T>) empty = std::numeric_limits<T>::quiet_NaN();
      std::fill(out->data<T>(), out->data<T>() + out->NumElements(), empty);
      return;
    }

    std::vector<int64_t> dims = plan->dims;
    const std::vector<bool>& red = plan->reduced;
    using Acc = AccumulatorFor<T, kKind>;
    Tensor current = in;
    for (int g = static_cast<int>(dims.size()) - 1; g >= 0; --g) {
      if (!red[g]) continue;
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < g; ++i) outer *= dims[i];
      for (size_t i = g + 1; i < dims.size(); ++i) inner *= dims[i];
      Tensor next;
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(in.dtype(), TensorShape({outer * inner}), &next));
      ReduceMiddle<T, Acc>(ctx, current.data<T>(), next.data<T>(), outer, dims[g], inner);
      current = next;
      dims[g] = 1;
    }
    T* o = out->data<T>();
    std::copy(current.data<T>(), current.data<T>() + out->NumElements(), o);
    if constexpr (kKind == Kind::kMean) {
      for (int64_t i = 0; i < out->NumElements(); ++i) o[i] = o[i] / static_cast<T>(reduced_count);
    }
  }

 private:
  bool keep_dims_ = false;
};

// The index of the largest value along one dimension; the first on ties, as TensorFlow.
template <typename T>
class ArgMaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    StatusOr<ArgMaxPlan> plan = MakeArgMaxPlan(in.shape(), ctx->input(1));
    OP_REQUIRES_OK(ctx, plan.status());
    const int64_t outer = plan->outer, n = plan->n, inner = plan->inner;
    const TensorShape& out_shape = plan->out_shape;
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    const T* ip = in.data<T>();
    const bool wide = out->dtype() == DataType::kInt64;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t k = 0; k < inner; ++k) {
        const T* base = ip + o * n * inner + k;
        int64_t best = 0;
        for (int64_t j = 1; j < n; ++j) {
          if (base[j * inner] > base[best * inner]) best = j;
        }
        if (wide) {
          out->data<int64_t>()[o * inner + k] = best;
        } else {
          out->data<int32_t>()[o * inner + k] = static_cast<int32_t>(best);
        }
      }
    }
  }
};

}  // namespace

void RegisterReductionKernels(KernelRegistry& r) {
  ForEachType<float, double, int32_t, int64_t>([&](auto zero) {
    using T = decltype(zero);
    r.Register<ReductionOp<T, Kind::kSum>>(KernelDefBuilder("Sum").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ReductionOp<T, Kind::kMean>>(KernelDefBuilder("Mean").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ReductionOp<T, Kind::kMax>>(KernelDefBuilder("Max").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ReductionOp<T, Kind::kMin>>(KernelDefBuilder("Min").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ReductionOp<T, Kind::kProd>>(KernelDefBuilder("Prod").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ArgMaxOp<T>>(KernelDefBuilder("ArgMax").Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
}

}  // namespace tessera::cpu
