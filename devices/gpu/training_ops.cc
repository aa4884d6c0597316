// The optimizers' apply ops on the GPU: ApplyGradientDescent, ApplyMomentum, ApplyRMSProp and
// ApplyAdam, in place on the variable and its accumulators. Hyperparameters stay in device
// memory (devices/gpu/launch.h): reading them on the host would wait for the GPU.
#include "devices/gpu/gpu_op_kernel.h"
#include "devices/gpu/launch.h"
#include "kernels/resources/variable.h"

namespace tessera::gpu {
namespace {

enum class Optimizer { kGradientDescent, kMomentum, kRMSProp, kAdam };

// Where an apply op's arguments are: its reference inputs (the variable first), its scalar
// hyperparameters, and the gradient.
struct ApplyArgs {
  std::vector<int> refs;
  std::vector<std::pair<int, const char*>> scalars;
  int grad;
};

ApplyArgs ArgsOf(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kGradientDescent:
      return {{0}, {{1, "alpha"}}, 2};
    case Optimizer::kMomentum:
      return {{0, 1}, {{2, "lr"}, {4, "momentum"}}, 3};
    case Optimizer::kRMSProp:
      return {{0, 1, 2}, {{3, "lr"}, {4, "rho"}, {5, "momentum"}, {6, "epsilon"}}, 7};
    case Optimizer::kAdam:
      break;
  }
  return {
      {0, 1, 2}, {{3, "beta1_power"}, {4, "beta2_power"}, {5, "lr"}, {6, "beta1"}, {7, "beta2"}, {8, "epsilon"}}, 9};
}

template <typename T>
class ApplyOp : public GpuOpKernel {
 public:
  ApplyOp(OpKernelConstruction* c, Optimizer optimizer) : GpuOpKernel(c), optimizer_(optimizer) {
    if (optimizer == Optimizer::kMomentum || optimizer == Optimizer::kAdam) {
      Status s = c->GetAttr("use_nesterov", &nesterov_);
      if (!s.ok()) c->SetStatus(s);
    }
  }

  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const ApplyArgs args = ArgsOf(optimizer_);
    for (const auto& [index, name] : args.scalars) {
      const Tensor& t = ctx->input(index);
      OP_REQUIRES(ctx, t.NumElements() == 1,
                  errors::InvalidArgument(name, " is not a scalar: ", t.shape().DebugString()));
    }
    const Tensor& grad = ctx->input(args.grad);
    const std::string& op = type_string();
    auto in = [ctx](int i) { return DevicePtr<T>(ctx->input(i)); };
    const int64_t n = grad.NumElements();
    cudaStream_t stream = gpu.compute_stream();
    Status launched;
    Status s = UpdateRefInputs(
        ctx, args.refs, grad.shape(),
        [&](const std::vector<Tensor*>& v) {
          T* var = MutableDevicePtr<T>(v[0]);
          switch (optimizer_) {
            case Optimizer::kGradientDescent:
              launched = CudaStatus(ApplyGradientDescent<T>(var, in(1), in(2), n, stream), op);
              break;
            case Optimizer::kMomentum:
              launched = CudaStatus(
                  ApplyMomentum<T>(var, MutableDevicePtr<T>(v[1]), in(2), in(3), in(4), nesterov_, n, stream), op);
              break;
            case Optimizer::kRMSProp:
              launched = CudaStatus(ApplyRMSProp<T>(var, MutableDevicePtr<T>(v[1]), MutableDevicePtr<T>(v[2]), in(3),
                                                    in(4), in(5), in(6), in(7), n, stream),
                                    op);
              break;
            case Optimizer::kAdam:
              launched = CudaStatus(ApplyAdam<T>(var, MutableDevicePtr<T>(v[1]), MutableDevicePtr<T>(v[2]), in(3),
                                                 in(4), in(5), in(6), in(7), in(8), in(9), nesterov_, n, stream),
                                    op);
              break;
          }
        },
        [&](const Tensor& shared) { return CopyOnGpu(ctx, gpu, shared); });
    OP_REQUIRES_OK(ctx, s);
    OP_REQUIRES_OK(ctx, launched);
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  const Optimizer optimizer_;
  bool nesterov_ = false;
};

}  // namespace

void RegisterTrainingKernels(KernelRegistry& r) {
  const std::pair<const char*, Optimizer> ops[] = {{"ApplyGradientDescent", Optimizer::kGradientDescent},
                                                   {"ApplyMomentum", Optimizer::kMomentum},
                                                   {"ApplyRMSProp", Optimizer::kRMSProp},
                                                   {"ApplyAdam", Optimizer::kAdam}};
  auto types = [&](auto zero) {
    using T = decltype(zero);
    for (const auto& [op, optimizer] : ops) {
      r.Register(KernelDefBuilder(op).Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<T>::value}),
                 [optimizer = optimizer](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
                   return std::make_unique<ApplyOp<T>>(c, optimizer);
                 });
    }
  };
  types(float{});
  types(double{});
}

}  // namespace tessera::gpu
