// The ops that write a variable through a reference input, on the CPU.
#include "kernels/cpu/register.h"
#include "kernels/variable.h"

namespace tessera::cpu {
namespace {

class AssignOp : public OpKernel {
 public:
  explicit AssignOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("validate_shape", &validate_shape_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    Variable* var = ctx->input_ref(0);
    const Tensor& value = ctx->input(1);
    if (validate_shape_ && var->declared_shape().IsFullyDefined()) {
      OP_REQUIRES(ctx, var->declared_shape() == value.shape(),
                  errors::InvalidArgument("Assign requires shapes of both tensors to match. lhs shape= ",
                                          var->declared_shape().DebugString(),
                                          " rhs shape= ", value.shape().DebugString()));
    }
    // The variable must not alias a tensor someone else may still use or change: take the
    // buffer only when this input slot is its last holder.
    var->Write(value.BufferIsUnshared() ? value : value.DeepCopy());
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
  bool IsExpensive() const override { return false; }

 private:
  bool validate_shape_ = true;
};

template <typename T, bool kAdd>
class AssignUpdateOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& delta = ctx->input(1);
    Status s = ctx->input_ref(0)->Update(ctx->input_ref_name(0), [&](Tensor* value) -> Status {
      if (!(value->shape() == delta.shape())) {
        return errors::InvalidArgument("Must have the same shape: variable has shape ",
                                       value->shape().DebugString(), ", update has shape ",
                                       delta.shape().DebugString());
      }
      T* v = value->data<T>();
      const T* d = delta.data<T>();
      for (int64_t i = 0; i < value->NumElements(); ++i) v[i] = kAdd ? v[i] + d[i] : v[i] - d[i];
      return Status::OK();
    });
    OP_REQUIRES_OK(ctx, s);
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
  bool IsExpensive() const override { return false; }
};

class IsVariableInitializedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->data<bool>()[0] = ctx->input_ref(0)->IsInitialized();
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterVariableKernels(KernelRegistry& r) {
  r.Register<AssignOp>(KernelDefBuilder("Assign").Device(kDeviceCpu));
  r.Register<IsVariableInitializedOp>(KernelDefBuilder("IsVariableInitialized").Device(kDeviceCpu));
  ForEachType<float, double, int32_t, int64_t>([&](auto zero) {
    using T = decltype(zero);
    r.Register<AssignUpdateOp<T, true>>(KernelDefBuilder("AssignAdd").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<AssignUpdateOp<T, false>>(KernelDefBuilder("AssignSub").Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
}

}  // namespace tessera::cpu
