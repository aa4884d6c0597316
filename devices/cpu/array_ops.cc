// Kernels that create, pass through or describe tensors without arithmetic.
#include <cstring>

#include "devices/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

class ConstOp : public OpKernel {
 public:
  explicit ConstOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("value", &value_);
    if (!s.ok()) c->SetStatus(s);
    // A value headed to a GPU is copied once into memory the GPU copies from directly.
    if (s.ok() && output_gpu_compatible(0) && GpuCompatibleHostAllocator() != nullptr &&
        DataTypeSize(value_.dtype()) > 0 && value_.NumElements() > 0) {
      StatusOr<Tensor> pinned = Tensor::Allocate(GpuCompatibleHostAllocator(), value_.dtype(), value_.shape());
      if (pinned.ok()) {
        std::memcpy(pinned->raw_data(), value_.raw_data(), value_.TotalBytes());
        value_ = std::move(*pinned);
      }
    }
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, value_); }
  bool IsExpensive() const override { return false; }

 private:
  Tensor value_;
};

template <typename T>
void FillWith(OpKernelContext* ctx, Tensor* t, const T& v) {
  T* p = t->data<T>();
  ctx->ParallelFor(t->NumElements(), 1, [&](int64_t begin, int64_t end) { std::fill(p + begin, p + end, v); });
}

class FillOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dims = ctx->input(0);
    const Tensor& value = ctx->input(1);
    OP_REQUIRES(ctx, dims.rank() == 1,
                errors::InvalidArgument("dims must be a vector, got shape ",
                                        dims.shape().DebugString()));
    OP_REQUIRES(ctx, value.rank() == 0,
                errors::InvalidArgument("value must be a scalar, got shape ",
                                        value.shape().DebugString()));
    std::vector<int64_t> d = IntTensorValues(dims);
    for (int64_t x : d) {
      OP_REQUIRES(ctx, x >= 0, errors::InvalidArgument("dims must be >= 0, got ", x));
    }
    StatusOr<TensorShape> shape = TensorShape::Make(d);
    OP_REQUIRES_OK(ctx, shape.status());
    OP_REQUIRES(ctx, value.dtype() != DataType::kVariant,
                errors::Unimplemented("Fill of a variant is not supported"));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    VisitDataType(value.dtype(), [&](auto zero) {
      using T = decltype(zero);
      FillWith<T>(ctx, out, value.data<T>()[0]);
    });
  }
};

template <int kValue>
class ConstantLikeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, DataTypeIsNumeric(ctx->input(0).dtype()) || ctx->input(0).dtype() == DataType::kBool,
                errors::Unimplemented("No ", kValue, "s of dtype ", DataTypeName(ctx->input(0).dtype())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(0).shape(), &out));
    VisitDataType(out->dtype(), [&](auto zero) {
      using T = decltype(zero);
      if constexpr (std::is_arithmetic_v<T>) FillWith<T>(ctx, out, static_cast<T>(kValue));
    });
  }
};

}  // namespace

void RegisterArrayKernels(KernelRegistry& r) {
  r.Register<ConstOp>(KernelDefBuilder("Const").Device(kDeviceCpu));
  r.Register<FillOp>(KernelDefBuilder("Fill").Device(kDeviceCpu));
  r.Register<ConstantLikeOp<0>>(KernelDefBuilder("ZerosLike").Device(kDeviceCpu));
  r.Register<ConstantLikeOp<1>>(KernelDefBuilder("OnesLike").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
