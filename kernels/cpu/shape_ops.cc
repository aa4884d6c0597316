// Kernels that compute with shapes, for gradients of broadcasting and reductions:
// BroadcastGradientArgs, BroadcastTo and Size.
#include <cstring>
#include <limits>

#include "graph/shape_inference.h"
#include "kernels/shape_argument.h"
#include "kernels/cpu/register.h"

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

}  // namespace

void RegisterShapeKernels(KernelRegistry& r) {
  r.Register<BroadcastGradientArgsOp>(KernelDefBuilder("BroadcastGradientArgs").Device(kDeviceCpu));
  r.Register<BroadcastToOp>(KernelDefBuilder("BroadcastTo").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
