// Softmax, LogSoftmax, the sparse softmax cross-entropy, BiasAdd and BiasAddGrad on the GPU.
#include "devices/gpu/gpu_op_kernel.h"
#include "devices/gpu/launch.h"
#include "kernels/util/sparse_xent_inputs.h"

namespace tessera::gpu {
namespace {

template <typename T, bool kLog>
class SoftmaxOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, in.rank() >= 1,
                errors::InvalidArgument("logits must have >= 1 dimension, got ", in.shape().DebugString()));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const int64_t cols = in.dim(in.rank() - 1);
    const int64_t rows = cols == 0 ? 0 : in.NumElements() / cols;
    OP_REQUIRES_OK(
        ctx, CudaStatus(Softmax<T>(kLog, DevicePtr<T>(in), MutableDevicePtr<T>(out), rows, cols, gpu.compute_stream()),
                        type_string()));
  }
};

// Labels are read on the GPU, so a label out of range cannot be an error without waiting
// for the GPU: its row's loss and gradient are NaN, as in TensorFlow's GPU kernel.
template <typename T, typename L>
class SparseXentOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckSparseXentInputs(logits, labels));
    const int64_t rows = logits.dim(0), depth = logits.dim(1);
    Tensor *loss, *backprop;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({rows}), &loss));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, logits.shape(), &backprop));
    OP_REQUIRES_OK(
        ctx, CudaStatus(SparseSoftmaxXent<T, L>(DevicePtr<T>(logits), DevicePtr<L>(labels), MutableDevicePtr<T>(loss),
                                                MutableDevicePtr<T>(backprop), rows, depth, gpu.compute_stream()),
                        type_string()));
  }
};

// The channel dimension and what lies inside it, for NHWC or NCHW.
struct ChannelLayout {
  int64_t channels;
  int64_t inner;
};
ChannelLayout LayoutOf(const Tensor& t, bool nchw) {
  const int axis = nchw ? 1 : t.rank() - 1;
  ChannelLayout layout{t.dim(axis), 1};
  for (int d = axis + 1; d < t.rank(); ++d) layout.inner *= t.dim(d);
  return layout;
}

bool IsNchw(OpKernelConstruction* c) {
  std::string format;
  Status s = c->GetAttr("data_format", &format);
  if (!s.ok()) c->SetStatus(s);
  return format == "NCHW";
}

template <typename T>
class BiasAddOp : public GpuOpKernel {
 public:
  explicit BiasAddOp(OpKernelConstruction* c) : GpuOpKernel(c), nchw_(IsNchw(c)) {}
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& in = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    OP_REQUIRES(ctx, in.rank() >= 2,
                errors::InvalidArgument("Input tensor must be at least 2D: ", in.shape().DebugString()));
    OP_REQUIRES(ctx, bias.rank() == 1, errors::InvalidArgument("Biases must be 1D: ", bias.shape().DebugString()));
    const ChannelLayout layout = LayoutOf(in, nchw_);
    OP_REQUIRES(ctx, bias.dim(0) == layout.channels,
                errors::InvalidArgument("Must provide as many biases as the channel dimension of the input tensor: ",
                                        bias.shape().DebugString(), " vs. ", in.shape().DebugString()));
    const T* ip = DevicePtr<T>(in);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, in.shape(), &out));
    OP_REQUIRES_OK(ctx, CudaStatus(BiasAdd<T>(ip, DevicePtr<T>(bias), false, MutableDevicePtr<T>(out), out->NumElements(),
                                              layout.channels, layout.inner, gpu.compute_stream()),
                                   "BiasAdd"));
  }

 private:
  const bool nchw_;
};

// The sum of the gradient over every dimension but the channels': [outer, C, inner] is
// summed over inner (NCHW), then over outer.
template <typename T>
class BiasAddGradOp : public GpuOpKernel {
 public:
  explicit BiasAddGradOp(OpKernelConstruction* c) : GpuOpKernel(c), nchw_(IsNchw(c)) {}
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& g = ctx->input(0);
    OP_REQUIRES(ctx, g.rank() >= 2,
                errors::InvalidArgument("Input tensor must be at least 2D: ", g.shape().DebugString()));
    const ChannelLayout layout = LayoutOf(g, nchw_);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({layout.channels}), &out));
    if (layout.channels == 0) return;
    const int64_t outer = layout.inner == 0 ? 0 : g.NumElements() / (layout.channels * layout.inner);
    Tensor per_channel = g;
    if (layout.inner > 1) {
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(g.dtype(), TensorShape({outer * layout.channels}), &per_channel));
      OP_REQUIRES_OK(ctx, ReduceOnGpu<T>(ctx, gpu, ReduceFn::kSum, DevicePtr<T>(g), MutableDevicePtr<T>(&per_channel),
                                         outer * layout.channels, layout.inner, 1));
    }
    OP_REQUIRES_OK(ctx, ReduceOnGpu<T>(ctx, gpu, ReduceFn::kSum, DevicePtr<T>(per_channel), MutableDevicePtr<T>(out), 1,
                                       outer, layout.channels));
  }

 private:
  const bool nchw_;
};

}  // namespace

void RegisterNnKernels(KernelRegistry& r) {
  auto types = [&r](auto zero) {
    using T = decltype(zero);
    r.Register<SoftmaxOp<T, false>>(
        KernelDefBuilder("Softmax").Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<T>::value}));
    r.Register<SoftmaxOp<T, true>>(
        KernelDefBuilder("LogSoftmax").Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<T>::value}));
    r.Register<SparseXentOp<T, int32_t>>(KernelDefBuilder("SparseSoftmaxCrossEntropyWithLogits")
                                             .Device(kDeviceGpu)
                                             .TypeConstraint("T", {DataTypeToEnum<T>::value})
                                             .TypeConstraint("Tlabels", {DataTypeToEnum<int32_t>::value}));
    r.Register<SparseXentOp<T, int64_t>>(KernelDefBuilder("SparseSoftmaxCrossEntropyWithLogits")
                                             .Device(kDeviceGpu)
                                             .TypeConstraint("T", {DataTypeToEnum<T>::value})
                                             .TypeConstraint("Tlabels", {DataTypeToEnum<int64_t>::value}));
    r.Register<BiasAddOp<T>>(
        KernelDefBuilder("BiasAdd").Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<T>::value}));
    r.Register<BiasAddGradOp<T>>(
        KernelDefBuilder("BiasAddGrad").Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<T>::value}));
  };
  types(float{});
  types(double{});
}

}  // namespace tessera::gpu
