// Gather and GatherV2 (rows of params picked by indices along an axis, every dtype) and
// UnsortedSegmentSum (rows summed into segments: the dense form of Gather's gradient).
#include <type_traits>
#include <vector>

#include "devices/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

// params viewed as [outer, axis_size, inner]; the output as [outer, num_indices, inner].
class GatherOp : public OpKernel {
 public:
  explicit GatherOp(OpKernelConstruction* c) : OpKernel(c) {
    if (c->node().op() == "GatherV2") {
      Status s = c->GetAttr("batch_dims", &batch_dims_);
      if (!s.ok()) c->SetStatus(s);
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    OP_REQUIRES(ctx, batch_dims_ == 0, errors::Unimplemented("GatherV2 with batch_dims = ", batch_dims_));
    OP_REQUIRES(ctx, params.rank() >= 1, errors::InvalidArgument("params must be at least 1 dimensional"));
    OP_REQUIRES(ctx, params.dtype() != DataType::kVariant, errors::Unimplemented("Gather of variant tensors"));
    int64_t axis = 0;
    if (num_inputs() == 3) {
      const Tensor& a = ctx->input(2);
      OP_REQUIRES(ctx, a.NumElements() == 1,
                  errors::InvalidArgument("axis must be scalar, got shape ", a.shape().DebugString()));
      axis = IntTensorValues(a)[0];
      OP_REQUIRES(ctx, axis >= -params.rank() && axis < params.rank(),
                  errors::InvalidArgument("Expected axis in the range [", -params.rank(), ", ", params.rank(),
                                          "), but got ", axis));
      if (axis < 0) axis += params.rank();
    }
    TensorShape shape;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) {
      shape.AddDim(params.dim(d));
      outer *= params.dim(d);
    }
    for (int64_t d : indices.shape().dims()) shape.AddDim(d);
    for (int d = static_cast<int>(axis) + 1; d < params.rank(); ++d) {
      shape.AddDim(params.dim(d));
      inner *= params.dim(d);
    }
    const int64_t limit = params.dim(static_cast<int>(axis));
    const std::vector<int64_t> idx = IntTensorValues(indices);
    for (size_t i = 0; i < idx.size(); ++i) {
      OP_REQUIRES(ctx, idx[i] >= 0 && idx[i] < limit,
                  errors::InvalidArgument("indices[", i, "] = ", idx[i], " is not in [0, ", limit, ")"));
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    const int64_t n = static_cast<int64_t>(idx.size());
    VisitDataType(params.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* p = params.data<T>();
      T* o = out->data<T>();
      for (int64_t r = 0; r < outer; ++r) {
        for (int64_t k = 0; k < n; ++k) {
          const T* row = p + (r * limit + idx[k]) * inner;
          std::copy(row, row + inner, o + (r * n + k) * inner);
        }
      }
    });
  }

 private:
  int64_t batch_dims_ = 0;
};

// A negative segment id drops its row, as TensorFlow's kernel does; one past num_segments is
// an error.
template <typename T>
class UnsortedSegmentSumOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& ids = ctx->input(1);
    OP_REQUIRES(ctx, ctx->input(2).NumElements() == 1,
                errors::InvalidArgument("num_segments should be a scalar, not shape ",
                                        ctx->input(2).shape().DebugString()));
    const int64_t num_segments = IntTensorValues(ctx->input(2))[0];
    OP_REQUIRES(ctx, num_segments >= 0, errors::InvalidArgument("num_segments must be non-negative, got ", num_segments));
    bool prefix = ids.rank() <= data.rank();
    for (int d = 0; prefix && d < ids.rank(); ++d) prefix = ids.dim(d) == data.dim(d);
    OP_REQUIRES(ctx, prefix,
                errors::InvalidArgument("data.shape = ", data.shape().DebugString(),
                                        " does not start with segment_ids.shape = ", ids.shape().DebugString()));
    TensorShape shape({num_segments});
    int64_t inner = 1;
    for (int d = ids.rank(); d < data.rank(); ++d) {
      shape.AddDim(data.dim(d));
      inner *= data.dim(d);
    }
    const std::vector<int64_t> seg = IntTensorValues(ids);
    for (size_t i = 0; i < seg.size(); ++i) {
      OP_REQUIRES(ctx, seg[i] < num_segments,
                  errors::InvalidArgument("segment_ids[", i, "] = ", seg[i], " is out of range [0, ", num_segments, ")"));
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    T* o = out->data<T>();
    std::fill(o, o + out->NumElements(), T(0));
    const T* in = data.data<T>();
    for (size_t i = 0; i < seg.size(); ++i) {
      if (seg[i] < 0) continue;
      T* dst = o + seg[i] * inner;
      const T* src = in + static_cast<int64_t>(i) * inner;
      for (int64_t j = 0; j < inner; ++j) {
        if constexpr (std::is_integral_v<T>) {  // wraps, as TensorFlow's does, without UB
          using U = std::make_unsigned_t<T>;
          dst[j] = static_cast<T>(static_cast<U>(dst[j]) + static_cast<U>(src[j]));
        } else {
          dst[j] += src[j];
        }
      }
    }
  }
};

}  // namespace

void RegisterGatherKernels(KernelRegistry& r) {
  r.Register<GatherOp>(KernelDefBuilder("Gather").Device(kDeviceCpu));
  r.Register<GatherOp>(KernelDefBuilder("GatherV2").Device(kDeviceCpu));
  ForEachType<float, double, int32_t, int64_t>([&](auto zero) {
    using T = decltype(zero);
    r.Register<UnsortedSegmentSumOp<T>>(KernelDefBuilder("UnsortedSegmentSum").Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
}

}  // namespace tessera::cpu
