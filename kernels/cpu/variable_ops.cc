// VariableV2 and the ops that write it through a reference input.
#include "kernels/cpu/register.h"
#include "kernels/variable.h"

namespace tessera::cpu {
namespace {

class VariableOp : public OpKernel {
 public:
  explicit VariableOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("shape", &shape_);
    if (s.ok()) s = c->GetAttr("dtype", &dtype_);
    if (s.ok()) s = c->GetAttr("container", &container_);
    if (s.ok()) s = c->GetAttr("shared_name", &shared_name_);
    if (!s.ok()) c->SetStatus(s);
    if (shared_name_.empty()) shared_name_ = name();
  }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->resource_manager() != nullptr,
                errors::Internal("VariableV2 needs a resource manager"));
    auto var = ctx->resource_manager()->LookupOrCreate<Variable>(
        container_, shared_name_, [&] { return std::make_shared<Variable>(dtype_, shape_); });
    OP_REQUIRES_OK(ctx, var.status());
    OP_REQUIRES(ctx, (*var)->dtype() == dtype_,
                errors::InvalidArgument("Variable ", shared_name_, " exists with dtype ",
                                        DataTypeName((*var)->dtype()), ", not ",
                                        DataTypeName(dtype_)));
    ctx->set_output_ref(0, std::move(*var), &name());
  }
  bool IsExpensive() const override { return false; }

 private:
  TensorShape shape_;
  DataType dtype_ = DataType::kInvalid;
  std::string container_;
  std::string shared_name_;
};

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

}  // namespace

void RegisterVariableKernels(KernelRegistry& r) {
  r.Register<VariableOp>(KernelDefBuilder("VariableV2").Device(kDeviceCpu));
  r.Register<AssignOp>(KernelDefBuilder("Assign").Device(kDeviceCpu));
  ForEachType<float, double, int32_t, int64_t>([&](auto zero) {
    using T = decltype(zero);
    r.Register<AssignUpdateOp<T, true>>(KernelDefBuilder("AssignAdd").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<AssignUpdateOp<T, false>>(KernelDefBuilder("AssignSub").Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
}

}  // namespace tessera::cpu
