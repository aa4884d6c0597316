// Kernels that compute with shapes, for gradients of broadcasting, reductions and gathers:
// BroadcastGradientArgs, BroadcastTo and Range.
#include <cmath>
#include <cstring>
#include <limits>

#include "devices/cpu/cpu_kernels.h"
#include "graph/shape_inference.h"
#include "kernels/util/shape_argument.h"

namespace tessera::cpu {
namespace {

Tensor IndexVector(DataType dtype, const std::vector<int64_t>& v) {
  Tensor t(dtype, TensorShape({static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DataType::kInt64) {
      t.data<int64_t>()[i] = v[i];
    } else {
      t.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
    }
  }
  return t;
}

// r0 and r1: the axes of the broadcast result that s0 and s1 were stretched along, which
// their gradients must be summed over.
class BroadcastGradientArgsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<TensorShape> s0 = ShapeFromVector(ctx->input(0), "s0");
    OP_REQUIRES_OK(ctx, s0.status());
    StatusOr<TensorShape> s1 = ShapeFromVector(ctx->input(1), "s1");
    OP_REQUIRES_OK(ctx, s1.status());
    StatusOr<TensorShape> out = InferenceContext::BroadcastShapes(*s0, *s1);
    OP_REQUIRES_OK(ctx, out.status());
    std::vector<int64_t> r0, r1;
    for (int i = 0; i < out->rank(); ++i) {
      const int i0 = i - (out->rank() - s0->rank()), i1 = i - (out->rank() - s1->rank());
      if (out->dim(i) == 1) continue;  // nothing to sum over a dimension of size one
      if (i0 < 0 || s0->dim(i0) == 1) r0.push_back(i);
      if (i1 < 0 || s1->dim(i1) == 1) r1.push_back(i);
    }
    ctx->set_output(0, IndexVector(ctx->input(0).dtype(), r0));
    ctx->set_output(1, IndexVector(ctx->input(0).dtype(), r1));
  }
  bool IsExpensive() const override { return false; }
};

class BroadcastToOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    StatusOr<TensorShape> shape = BroadcastToShape(in, ctx->input(1));
    OP_REQUIRES_OK(ctx, shape.status());
    if (in.shape() == *shape) {
      ctx->set_output(0, in);
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    if (out->NumElements() == 0) return;
    // Input strides over the output's dimensions: 0 where the input is stretched.
    const int rank = shape->rank();
    int64_t stride[TensorShape::kMaxRank] = {};
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; --i) {
      const int j = i - (rank - in.rank());
      if (j >= 0) {
        stride[i] = in.dim(j) == 1 ? 0 : s;
        s *= in.dim(j);
      }
    }
    const size_t elem = DataTypeStorageSize(in.dtype());
    const int64_t inner = shape->dim(rank - 1);
    const int64_t rows = out->NumElements() / inner;
    const char* src = static_cast<const char*>(in.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    const bool object = DataTypeHoldsStrings(in.dtype()) || in.dtype() == DataType::kVariant;
    OP_REQUIRES(ctx, !object, errors::Unimplemented("BroadcastTo of ", DataTypeName(in.dtype())));
    ctx->ParallelFor(rows, inner, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        // The input offset of output row r, from its index in each outer dimension.
        int64_t offset = 0, rest = r;
        for (int i = rank - 2; i >= 0; --i) {
          offset += (rest % shape->dim(i)) * stride[i];
          rest /= shape->dim(i);
        }
        char* row = dst + r * inner * elem;
        if (stride[rank - 1] == 0) {
          for (int64_t k = 0; k < inner; ++k) std::memcpy(row + k * elem, src + offset * elem, elem);
        } else {
          std::memcpy(row, src + offset * elem, inner * elem);
        }
      }
    });
  }
};

// start, start + delta, ... up to limit (excluded), as numpy's arange.
template <typename T>
class RangeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < 3; ++i) {
      OP_REQUIRES(ctx, ctx->input(i).NumElements() == 1,
                  errors::InvalidArgument("Range's inputs must be scalars; input ", i, " has shape ",
                                          ctx->input(i).shape().DebugString()));
    }
    const T start = ctx->input(0).data<T>()[0], limit = ctx->input(1).data<T>()[0], delta = ctx->input(2).data<T>()[0];
    OP_REQUIRES(ctx, delta != 0, errors::InvalidArgument("Requires delta != 0: ", delta));
    OP_REQUIRES(ctx, delta > 0 ? start <= limit : start >= limit,
                errors::InvalidArgument("Requires start ", delta > 0 ? "<=" : ">=", " limit when delta ",
                                        delta > 0 ? "> 0: " : "< 0: ", start, "/", limit));
    // In double, so that an int64 span does not overflow; sizes past 2^53 fail below anyway.
    const double size = std::ceil(std::abs((static_cast<double>(limit) - static_cast<double>(start)) /
                                           static_cast<double>(delta)));
    OP_REQUIRES(ctx, size <= static_cast<double>(std::numeric_limits<int32_t>::max()),
                errors::InvalidArgument("Range of ", size, " elements is too large"));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(size)}), &out));
    T* o = out->data<T>();
    for (int64_t i = 0; i < out->NumElements(); ++i) o[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterShapeKernels(KernelRegistry& r) {
  ForEachType<float, double, int32_t, int64_t>([&](auto zero) {
    using T = decltype(zero);
    r.Register<RangeOp<T>>(KernelDefBuilder("Range").Device(kDeviceCpu).TypeConstraint<T>("Tidx"));
  });
  r.Register<BroadcastGradientArgsOp>(KernelDefBuilder("BroadcastGradientArgs").Device(kDeviceCpu));
  r.Register<BroadcastToOp>(KernelDefBuilder("BroadcastTo").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
