// Select (tf.compat.v1.where: the condition of t's shape, a scalar, or a vector along t's first
// dimension) and SelectV2 (tf.where: all three operands broadcast), for every dtype.
#include <vector>

#include "devices/cpu/cpu_kernels.h"
#include "graph/shape_inference.h"

namespace tessera::cpu {
namespace {

// Each operand's stride per output dimension; 0 where the operand repeats along it.
struct SelectWalk {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides[3];
};

// Strides of `s` broadcast (right-aligned, numpy's rule) onto `out`.
std::vector<int64_t> BroadcastStrides(const TensorShape& s, const TensorShape& out) {
  std::vector<int64_t> strides(static_cast<size_t>(out.rank()), 0);
  int64_t stride = 1;
  for (int i = s.rank() - 1, o = out.rank() - 1; i >= 0; --i, --o) {
    if (s.dim(i) != 1) strides[o] = stride;
    stride *= s.dim(i);
  }
  return strides;
}

template <typename T>
void RunSelect(const SelectWalk& w, const bool* c, const T* t, const T* e, T* out) {
  const int rank = static_cast<int>(w.dims.size());
  int64_t n = 1;
  for (int64_t d : w.dims) n *= d;
  if (n == 0) return;
  if (rank == 0) {
    *out = *c ? *t : *e;
    return;
  }
  const int64_t inner = w.dims[rank - 1];
  const int64_t sc = w.strides[0][rank - 1], st = w.strides[1][rank - 1], se = w.strides[2][rank - 1];
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  int64_t at[3] = {0, 0, 0};
  for (int64_t done = 0; done < n; done += inner) {
    for (int64_t j = 0; j < inner; ++j) *out++ = c[at[0] + j * sc] ? t[at[1] + j * st] : e[at[2] + j * se];
    for (int d = rank - 2; d >= 0; --d) {
      for (int k = 0; k < 3; ++k) at[k] += w.strides[k][d];
      if (++index[d] < w.dims[d]) break;
      for (int k = 0; k < 3; ++k) at[k] -= w.strides[k][d] * w.dims[d];
      index[d] = 0;
    }
  }
}

class SelectOp : public OpKernel {
 public:
  explicit SelectOp(OpKernelConstruction* c) : OpKernel(c), broadcasts_(c->node().op() == "SelectV2") {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& e = ctx->input(2);
    OP_REQUIRES(ctx, t.dtype() != DataType::kVariant, errors::Unimplemented("Select of variant tensors"));
    TensorShape shape;
    SelectWalk w;
    if (broadcasts_) {
      StatusOr<TensorShape> te = InferenceContext::BroadcastShapes(t.shape(), e.shape());
      OP_REQUIRES_OK(ctx, te.status());
      StatusOr<TensorShape> out = InferenceContext::BroadcastShapes(cond.shape(), *te);
      OP_REQUIRES_OK(ctx, out.status());
      shape = *out;
      w.strides[0] = BroadcastStrides(cond.shape(), shape);
    } else {
      OP_REQUIRES(ctx, t.shape() == e.shape(),
                  errors::InvalidArgument("'then' and 'else' must have the same size.  but received: ",
                                          t.shape().DebugString(), " vs. ", e.shape().DebugString()));
      shape = t.shape();
      if (cond.rank() == 1 && t.rank() > 1) {
        OP_REQUIRES(ctx, cond.dim(0) == t.dim(0),
                    errors::InvalidArgument("Number of batches of 'then' must match size of 'cond', but saw: ",
                                            t.dim(0), " vs. ", cond.dim(0)));
        w.strides[0].assign(static_cast<size_t>(t.rank()), 0);
        w.strides[0][0] = 1;
      } else {
        OP_REQUIRES(ctx, cond.rank() == 0 || cond.shape() == t.shape(),
                    errors::InvalidArgument("'cond' and 'then' must have the same size or 'cond' a vector along "
                                            "the first dimension, but received: ",
                                            cond.shape().DebugString(), " vs. ", t.shape().DebugString()));
        w.strides[0] = BroadcastStrides(cond.shape(), shape);
      }
    }
    w.dims.assign(shape.dims().begin(), shape.dims().end());
    w.strides[1] = BroadcastStrides(t.shape(), shape);
    w.strides[2] = BroadcastStrides(e.shape(), shape);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    VisitDataType(t.dtype(), [&](auto zero) {
      using T = decltype(zero);
      RunSelect<T>(w, cond.data<bool>(), t.data<T>(), e.data<T>(), out->data<T>());
    });
  }

 private:
  const bool broadcasts_;
};

}  // namespace

void RegisterSelectKernels(KernelRegistry& r) {
  r.Register<SelectOp>(KernelDefBuilder("Select").Device(kDeviceCpu));
  r.Register<SelectOp>(KernelDefBuilder("SelectV2").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
