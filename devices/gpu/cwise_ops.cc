// Element-wise GPU kernels: unary math, binary ops and comparisons with broadcasting, AddN,
// BroadcastTo, Fill, ZerosLike/OnesLike and Cast.
#include "devices/gpu/gpu_op_kernel.h"
#include "devices/gpu/launch.h"
#include "graph/shape_inference.h"
#include "kernels/util/shape_argument.h"

namespace tessera::gpu {
namespace {

template <typename T>
class UnaryOp : public GpuOpKernel {
 public:
  UnaryOp(OpKernelConstruction* c, UnaryFn fn) : GpuOpKernel(c), fn_(fn) {}
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& in = ctx->input(0);
    const T* ip = DevicePtr<T>(in);  // stays valid if the buffer is forwarded to the output
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, in.shape(), &out));
    OP_REQUIRES_OK(ctx,
                   CudaStatus(Unary<T>(fn_, ip, MutableDevicePtr<T>(out), out->NumElements(), gpu.compute_stream()),
                              type_string()));
  }

 private:
  const UnaryFn fn_;
};

StatusOr<TensorShape> BroadcastOutput(const Tensor& a, const Tensor& b) {
  return InferenceContext::BroadcastShapes(a.shape(), b.shape());
}

template <typename T>
class BinaryOp : public GpuOpKernel {
 public:
  BinaryOp(OpKernelConstruction* c, BinaryFn fn) : GpuOpKernel(c), fn_(fn) {}
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    StatusOr<TensorShape> shape = BroadcastOutput(a, b);
    OP_REQUIRES_OK(ctx, shape.status());
    const BroadcastPlan plan = MakeBroadcastPlan(a.shape(), b.shape(), *shape);
    const T* ap = DevicePtr<T>(a);
    const T* bp = DevicePtr<T>(b);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(a.shape() == *shape ? 0 : 1, 0, *shape, &out));
    OP_REQUIRES_OK(ctx, CudaStatus(Binary<T>(fn_, plan, ap, bp, MutableDevicePtr<T>(out), out->NumElements(),
                                             gpu.compute_stream()),
                                   type_string()));
  }

 private:
  const BinaryFn fn_;
};

template <typename T>
class CompareOp : public GpuOpKernel {
 public:
  CompareOp(OpKernelConstruction* c, CompareFn fn) : GpuOpKernel(c), fn_(fn) {}
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    StatusOr<TensorShape> shape = BroadcastOutput(a, b);
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    const BroadcastPlan plan = MakeBroadcastPlan(a.shape(), b.shape(), *shape);
    OP_REQUIRES_OK(ctx, CudaStatus(Compare<T>(fn_, plan, DevicePtr<T>(a), DevicePtr<T>(b), MutableDevicePtr<bool>(out),
                                              out->NumElements(), gpu.compute_stream()),
                                   type_string()));
  }

 private:
  const CompareFn fn_;
};

// Sums its inputs pairwise into the output, one launch per input after the second.
template <typename T>
class AddNOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& first = ctx->input(0);
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      OP_REQUIRES(ctx, ctx->input(i).shape() == first.shape(),
                  errors::InvalidArgument("AddN inputs must have the same shape: ", first.shape().DebugString(),
                                          " and ", ctx->input(i).shape().DebugString()));
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, first.shape(), &out));
    const int64_t n = out->NumElements();
    if (ctx->num_inputs() == 1) {
      OP_REQUIRES_OK(ctx, CudaStatus(cudaMemcpyAsync(out->raw_data(), first.raw_data(), first.TotalBytes(),
                                                     cudaMemcpyDeviceToDevice, gpu.compute_stream()),
                                     "AddN copy"));
      return;
    }
    const BroadcastPlan plan = MakeBroadcastPlan(first.shape(), first.shape(), first.shape());
    T* o = MutableDevicePtr<T>(out);
    const T* acc = DevicePtr<T>(first);
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      OP_REQUIRES_OK(
          ctx, CudaStatus(Binary<T>(BinaryFn::kAdd, plan, acc, DevicePtr<T>(ctx->input(i)), o, n, gpu.compute_stream()),
                          "AddN"));
      acc = o;
    }
  }
};

template <typename T>
class FillOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& dims = ctx->input(0);
    const Tensor& value = ctx->input(1);  // in host memory
    OP_REQUIRES(ctx, dims.rank() == 1,
                errors::InvalidArgument("dims must be a vector, got shape ", dims.shape().DebugString()));
    OP_REQUIRES(ctx, value.rank() == 0,
                errors::InvalidArgument("value must be a scalar, got shape ", value.shape().DebugString()));
    std::vector<int64_t> d = IntTensorValues(dims);
    for (int64_t x : d) OP_REQUIRES(ctx, x >= 0, errors::InvalidArgument("dims must be >= 0, got ", x));
    StatusOr<TensorShape> shape = TensorShape::Make(d);
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    OP_REQUIRES_OK(
        ctx, CudaStatus(Fill<T>(MutableDevicePtr<T>(out), value.data<T>()[0], out->NumElements(), gpu.compute_stream()),
                        "Fill"));
  }
};

template <typename T, int kValue>
class ConstantLikeOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(0).shape(), &out));
    OP_REQUIRES_OK(ctx, CudaStatus(Fill<T>(MutableDevicePtr<T>(out), static_cast<T>(kValue), out->NumElements(),
                                           gpu.compute_stream()),
                                   type_string()));
  }
};

// The device code's name for a type: float16 and bfloat16 are their bits there.
template <typename T>
struct OnDevice {
  using type = T;
};
template <>
struct OnDevice<Half> {
  using type = HalfBits;
};
template <>
struct OnDevice<BFloat16> {
  using type = BFloat16Bits;
};
static_assert(sizeof(Half) == sizeof(HalfBits) && sizeof(BFloat16) == sizeof(BFloat16Bits));

template <typename From, typename To>
class CastOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    using F = typename OnDevice<From>::type;
    using T = typename OnDevice<To>::type;
    const Tensor& in = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    OP_REQUIRES_OK(ctx, CudaStatus(Cast<F, T>(static_cast<const F*>(in.raw_data()), static_cast<T*>(out->raw_data()),
                                              in.NumElements(), gpu.compute_stream()),
                                   "Cast"));
  }
};

template <typename T>
class BroadcastToOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& in = ctx->input(0);
    StatusOr<TensorShape> shape = BroadcastToShape(in, ctx->input(1));
    OP_REQUIRES_OK(ctx, shape.status());
    if (in.shape() == *shape) {
      ctx->set_output(0, in);
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    OP_REQUIRES_OK(ctx, CudaStatus(Broadcast<T>(MakeBroadcastPlan(in.shape(), in.shape(), *shape), DevicePtr<T>(in),
                                                MutableDevicePtr<T>(out), out->NumElements(), gpu.compute_stream()),
                                   "BroadcastTo"));
  }
};

template <typename T, typename Kernel, typename Fn>
void RegisterFn(KernelRegistry& r, const char* op, Fn fn) {
  r.Register(KernelDefBuilder(op).Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<T>::value}),
             [fn](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> { return std::make_unique<Kernel>(c, fn); });
}

template <typename From>
void RegisterCastsFrom(KernelRegistry& r) {
  auto to = [&r](auto zero) {
    using To = decltype(zero);
    r.Register<CastOp<From, To>>(KernelDefBuilder("Cast")
                                     .Device(kDeviceGpu)
                                     .TypeConstraint("SrcT", {DataTypeToEnum<From>::value})
                                     .TypeConstraint("DstT", {DataTypeToEnum<To>::value}));
  };
  to(float{});
  to(double{});
  to(int64_t{});
  to(Half{});
  to(BFloat16{});
}

}  // namespace

void RegisterCwiseKernels(KernelRegistry& r) {
  auto floating = [&r](auto zero) {
    using T = decltype(zero);
    const std::pair<const char*, UnaryFn> unary[] = {{"Neg", UnaryFn::kNeg},   {"Square", UnaryFn::kSquare},
                                                     {"Sqrt", UnaryFn::kSqrt}, {"Exp", UnaryFn::kExp},
                                                     {"Log", UnaryFn::kLog},   {"Relu", UnaryFn::kRelu}};
    for (const auto& [op, fn] : unary) RegisterFn<T, UnaryOp<T>>(r, op, fn);
    const std::pair<const char*, BinaryFn> binary[] = {
        {"Add", BinaryFn::kAdd},          {"Sub", BinaryFn::kSub},         {"Mul", BinaryFn::kMul},
        {"Div", BinaryFn::kDiv},          {"Maximum", BinaryFn::kMaximum}, {"Minimum", BinaryFn::kMinimum},
        {"ReluGrad", BinaryFn::kReluGrad}};
    for (const auto& [op, fn] : binary) RegisterFn<T, BinaryOp<T>>(r, op, fn);
    const std::pair<const char*, CompareFn> compare[] = {
        {"Equal", CompareFn::kEqual}, {"Greater", CompareFn::kGreater}, {"Less", CompareFn::kLess}};
    for (const auto& [op, fn] : compare) RegisterFn<T, CompareOp<T>>(r, op, fn);
    r.Register<AddNOp<T>>(KernelDefBuilder("AddN").Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<T>::value}));
    r.Register<FillOp<T>>(KernelDefBuilder("Fill")
                              .Device(kDeviceGpu)
                              .TypeConstraint("T", {DataTypeToEnum<T>::value})
                              .HostMemory("dims")
                              .HostMemory("value"));
    r.Register<BroadcastToOp<T>>(KernelDefBuilder("BroadcastTo")
                                     .Device(kDeviceGpu)
                                     .TypeConstraint("T", {DataTypeToEnum<T>::value})
                                     .HostMemory("shape"));
    r.Register<ConstantLikeOp<T, 0>>(
        KernelDefBuilder("ZerosLike").Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<T>::value}));
    r.Register<ConstantLikeOp<T, 1>>(
        KernelDefBuilder("OnesLike").Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<T>::value}));
  };
  floating(float{});
  floating(double{});
  RegisterCastsFrom<float>(r);
  RegisterCastsFrom<double>(r);
  RegisterCastsFrom<int64_t>(r);
  RegisterCastsFrom<int32_t>(r);
  RegisterCastsFrom<bool>(r);
  RegisterCastsFrom<uint8_t>(r);
  RegisterCastsFrom<Half>(r);
  RegisterCastsFrom<BFloat16>(r);
}

}  // namespace tessera::gpu
