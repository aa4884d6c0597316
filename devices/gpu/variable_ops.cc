// The ops that write a variable in GPU memory through a reference input: Assign, AssignAdd,
// AssignSub. A buffer a reader still shares is copied on the compute stream, never on the host.
#include "devices/gpu/gpu_op_kernel.h"
#include "devices/gpu/launch.h"
#include "kernels/resources/variable.h"

namespace tessera::gpu {

StatusOr<Tensor> CopyOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu, const Tensor& t) {
  Tensor copy;
  RETURN_IF_ERROR(ctx->allocate_temp(t.dtype(), t.shape(), &copy));
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(copy.raw_data(), t.raw_data(), t.TotalBytes(), cudaMemcpyDeviceToDevice, gpu.compute_stream()),
      "copying a variable's value"));
  return copy;
}

namespace {

class AssignOp : public GpuOpKernel {
 public:
  explicit AssignOp(OpKernelConstruction* c) : GpuOpKernel(c) {
    Status s = c->GetAttr("validate_shape", &validate_shape_);
    if (!s.ok()) c->SetStatus(s);
  }
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    Variable* var = ctx->input_ref(0);
    const Tensor& value = ctx->input(1);
    if (validate_shape_ && var->declared_shape().IsFullyDefined()) {
      OP_REQUIRES(
          ctx, var->declared_shape() == value.shape(),
          errors::InvalidArgument("Assign requires shapes of both tensors to match. lhs shape= ",
                                  var->declared_shape().DebugString(), " rhs shape= ", value.shape().DebugString()));
    }
    if (value.BufferIsUnshared()) {
      var->Write(value);
    } else {
      StatusOr<Tensor> copy = CopyOnGpu(ctx, gpu, value);
      OP_REQUIRES_OK(ctx, copy.status());
      var->Write(std::move(*copy));
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
  bool IsExpensive() const override { return false; }

 private:
  bool validate_shape_ = true;
};

template <typename T>
class AssignUpdateOp : public GpuOpKernel {
 public:
  AssignUpdateOp(OpKernelConstruction* c, BinaryFn fn) : GpuOpKernel(c), fn_(fn) {}
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& delta = ctx->input(1);
    const BroadcastPlan plan = MakeBroadcastPlan(delta.shape(), delta.shape(), delta.shape());
    Status s = ctx->input_ref(0)->Update(
        ctx->input_ref_name(0),
        [&](Tensor* value) -> Status {
          if (value->shape() != delta.shape()) {
            return errors::InvalidArgument("Must have the same shape: variable has shape ",
                                           value->shape().DebugString(), ", update has shape ",
                                           delta.shape().DebugString());
          }
          T* v = MutableDevicePtr<T>(value);
          return CudaStatus(Binary<T>(fn_, plan, v, DevicePtr<T>(delta), v, value->NumElements(), gpu.compute_stream()),
                            type_string());
        },
        [&](const Tensor& shared) { return CopyOnGpu(ctx, gpu, shared); });
    OP_REQUIRES_OK(ctx, s);
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
  bool IsExpensive() const override { return false; }

 private:
  const BinaryFn fn_;
};

}  // namespace

void RegisterVariableKernels(KernelRegistry& r) {
  r.Register<AssignOp>(
      KernelDefBuilder("Assign").Device(kDeviceGpu).TypeConstraint("T", {DataType::kFloat, DataType::kDouble}));
  auto types = [&r](auto zero) {
    using T = decltype(zero);
    const std::pair<const char*, BinaryFn> updates[] = {{"AssignAdd", BinaryFn::kAdd}, {"AssignSub", BinaryFn::kSub}};
    for (const auto& [op, fn] : updates) {
      r.Register(KernelDefBuilder(op).Device(kDeviceGpu).TypeConstraint("T", {DataTypeToEnum<T>::value}),
                 [fn = fn](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
                   return std::make_unique<AssignUpdateOp<T>>(c, fn);
                 });
    }
  };
  types(float{});
  types(double{});
}

}  // namespace tessera::gpu
