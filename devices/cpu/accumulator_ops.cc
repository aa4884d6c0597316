// The ConditionalAccumulator ops of SyncReplicasOptimizer: the accumulator op creates or
// finds the accumulator named by shared_name (its own name when empty) and outputs a handle,
// the string vector [container, name]; AccumulatorTakeGradient waits without holding a
// thread.
#include "devices/cpu/cpu_kernels.h"
#include "kernels/resource_handle.h"
#include "kernels/resources/conditional_accumulator.h"

namespace tessera::cpu {
namespace {

class AccumulatorOp : public OpKernel {
 public:
  explicit AccumulatorOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string reduction;
    Status s = c->GetAttr("dtype", &options_.dtype);
    if (s.ok()) s = c->GetAttr("shape", &options_.shape);
    if (s.ok()) s = c->GetAttr("container", &container_);
    if (s.ok()) s = c->GetAttr("shared_name", &options_.name);
    if (s.ok()) s = c->GetAttr("reduction_type", &reduction);
    if (s.ok() && reduction != "MEAN" && reduction != "SUM") {
      s = errors::InvalidArgument("reduction_type must be MEAN or SUM, got '", reduction, "'");
    }
    options_.reduction = reduction == "SUM" ? ConditionalAccumulator::Reduction::kSum
                                            : ConditionalAccumulator::Reduction::kMean;
    if (options_.name.empty()) options_.name = name();
    if (s.ok()) s = ConditionalAccumulator::Validate(options_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->resource_manager() != nullptr, errors::Internal("An accumulator needs a resource manager"));
    auto acc = ctx->resource_manager()->LookupOrCreate<ConditionalAccumulator>(
        container_, options_.name, [this] { return std::make_shared<ConditionalAccumulator>(options_); });
    OP_REQUIRES_OK(ctx, acc.status());
    OP_REQUIRES_OK(ctx, (*acc)->CheckCompatible(options_));
    OP_REQUIRES_OK(ctx, OutputResourceHandle(ctx, container_, options_.name));
  }
  bool IsExpensive() const override { return false; }

 private:
  ConditionalAccumulator::Options options_;
  std::string container_;
};

StatusOr<std::shared_ptr<ConditionalAccumulator>> AccumulatorFromHandle(OpKernelContext* ctx) {
  return ResourceFromHandle<ConditionalAccumulator>(ctx, "accumulator");
}

StatusOr<int64_t> ScalarInput(OpKernelContext* ctx, int index, std::string_view what) {
  const Tensor& t = ctx->input(index);
  if (t.NumElements() != 1 || t.shape().rank() != 0) {
    return errors::InvalidArgument(what, " must be a scalar, got shape ", t.shape().DebugString());
  }
  return t.dtype() == DataType::kInt32 ? t.data<int32_t>()[0] : t.data<int64_t>()[0];
}

class ApplyGradientOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto acc = AccumulatorFromHandle(ctx);
    OP_REQUIRES_OK(ctx, acc.status());
    StatusOr<int64_t> local_step = ScalarInput(ctx, 1, "local_step");
    OP_REQUIRES_OK(ctx, local_step.status());
    OP_REQUIRES_OK(ctx, (*acc)->ApplyGradient(*local_step, ctx->input(2)));
  }
  bool IsExpensive() const override { return false; }
};

class TakeGradientOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    auto acc = AccumulatorFromHandle(ctx);
    OP_REQUIRES_OK_ASYNC(ctx, acc.status(), done);
    StatusOr<int64_t> num_required = ScalarInput(ctx, 1, "num_required");
    OP_REQUIRES_OK_ASYNC(ctx, num_required.status(), done);
    OP_REQUIRES_ASYNC(ctx, (*acc)->options().dtype == output_type(0),
                      errors::InvalidArgument("A take of ", DataTypeName(output_type(0)), " from ",
                                              (*acc)->DebugString(), ", which accumulates ",
                                              DataTypeName((*acc)->options().dtype)),
                      done);
    (*acc)->TakeGradient(*num_required, ctx->cancellation_manager(),
                         [ctx, done = std::move(done)](const Status& s, Tensor average) {
                           ctx->SetStatus(s);
                           if (s.ok()) ctx->set_output(0, std::move(average));
                           done();
                         });
  }
  bool IsExpensive() const override { return false; }
};

class NumAccumulatedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto acc = AccumulatorFromHandle(ctx);
    OP_REQUIRES_OK(ctx, acc.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(), &out));
    out->data<int32_t>()[0] = static_cast<int32_t>((*acc)->num_accumulated());
  }
  bool IsExpensive() const override { return false; }
};

class SetGlobalStepOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto acc = AccumulatorFromHandle(ctx);
    OP_REQUIRES_OK(ctx, acc.status());
    StatusOr<int64_t> step = ScalarInput(ctx, 1, "new_global_step");
    OP_REQUIRES_OK(ctx, step.status());
    (*acc)->SetGlobalStep(*step);
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterAccumulatorKernels(KernelRegistry& r) {
  r.Register<AccumulatorOp>(KernelDefBuilder("ConditionalAccumulator").Device(kDeviceCpu));
  r.Register<ApplyGradientOp>(KernelDefBuilder("AccumulatorApplyGradient").Device(kDeviceCpu));
  r.Register<TakeGradientOp>(KernelDefBuilder("AccumulatorTakeGradient").Device(kDeviceCpu));
  r.Register<NumAccumulatedOp>(KernelDefBuilder("AccumulatorNumAccumulated").Device(kDeviceCpu));
  r.Register<SetGlobalStepOp>(KernelDefBuilder("AccumulatorSetGlobalStep").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
