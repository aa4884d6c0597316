// The ops that write a variable through a reference input, and the resource-variable ops
// that name it through a handle, on the CPU.
#include "devices/cpu/cpu_kernels.h"
#include "kernels/resource_handle.h"
#include "kernels/resources/variable.h"

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

class VarHandleOp : public OpKernel {
 public:
  explicit VarHandleOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("container", &container_);
    if (s.ok()) s = c->GetAttr("shared_name", &shared_name_);
    if (!s.ok()) c->SetStatus(s);
    if (shared_name_.empty()) shared_name_ = name();
  }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, OutputResourceHandle(ctx, container_, shared_name_));
  }
  bool IsExpensive() const override { return false; }

 private:
  std::string container_;
  std::string shared_name_;
};

// The variable behind input 0, checked to hold `dtype`.
StatusOr<std::shared_ptr<Variable>> TypedVariable(OpKernelContext* ctx, DataType dtype, ResourceName* name) {
  ASSIGN_OR_RETURN(std::shared_ptr<Variable> var, ResourceVariableOfInput(ctx, 0, name));
  if (var->dtype() != dtype) {
    return errors::InvalidArgument("Trying to access resource variable ", name->name, " of dtype ",
                                   DataTypeName(var->dtype()), " as ", DataTypeName(dtype));
  }
  return var;
}

class ReadVariableOp : public OpKernel {
 public:
  explicit ReadVariableOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("dtype", &dtype_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    ResourceName name;
    auto var = TypedVariable(ctx, dtype_, &name);
    OP_REQUIRES_OK(ctx, var.status());
    // The output shares the variable's buffer; a later update copies it first (Variable).
    StatusOr<Tensor> value = (*var)->Read(name.name);
    OP_REQUIRES_OK(ctx, value.status());
    ctx->set_output(0, std::move(*value));
  }
  bool IsExpensive() const override { return false; }

 private:
  DataType dtype_ = DataType::kInvalid;
};

class AssignVariableOp : public OpKernel {
 public:
  explicit AssignVariableOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("dtype", &dtype_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    ResourceName name;
    StatusOr<ResourceName> parsed = ResourceNameOfInput(ctx, "variable", 0);
    OP_REQUIRES_OK(ctx, parsed.status());
    OP_REQUIRES(ctx, ctx->resource_manager() != nullptr,
                errors::Internal("A resource variable needs a resource manager"));
    auto var = ctx->resource_manager()->LookupOrCreate<Variable>(
        parsed->container, parsed->name, [&] { return std::make_shared<Variable>(dtype_, TensorShape::UnknownRank()); });
    OP_REQUIRES_OK(ctx, var.status());
    OP_REQUIRES(ctx, (*var)->dtype() == dtype_,
                errors::InvalidArgument("Trying to assign ", DataTypeName(dtype_), " to resource variable ",
                                        parsed->name, " of dtype ", DataTypeName((*var)->dtype())));
    const Tensor& value = ctx->input(1);
    (*var)->Write(value.BufferIsUnshared() ? value : value.DeepCopy());
  }
  bool IsExpensive() const override { return false; }

 private:
  DataType dtype_ = DataType::kInvalid;
};

template <typename T, bool kAdd>
class AssignUpdateVariableOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ResourceName name;
    auto var = TypedVariable(ctx, DataTypeToEnum<T>::value, &name);
    OP_REQUIRES_OK(ctx, var.status());
    const Tensor& delta = ctx->input(1);
    OP_REQUIRES_OK(ctx, (*var)->Update(name.name, [&](Tensor* value) -> Status {
      if (!(value->shape() == delta.shape())) {
        return errors::InvalidArgument("Cannot update variable with shape ", value->shape().DebugString(),
                                       " using a Tensor with shape ", delta.shape().DebugString(),
                                       ", shapes must be equal.");
      }
      T* v = value->data<T>();
      const T* d = delta.data<T>();
      for (int64_t i = 0; i < value->NumElements(); ++i) v[i] = kAdd ? v[i] + d[i] : v[i] - d[i];
      return Status::OK();
    }));
  }
  bool IsExpensive() const override { return false; }
};

class VarIsInitializedOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ResourceName name;
    StatusOr<std::shared_ptr<Variable>> var = ResourceVariableOfInput(ctx, 0, &name);
    OP_REQUIRES(ctx, var.ok() || var.status().code() == Code::kFailedPrecondition, var.status());
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->data<bool>()[0] = var.ok() && (*var)->IsInitialized();
  }
  bool IsExpensive() const override { return false; }
};

// Tessera's reads never copy on a later write's account: nothing to disable.
class DisableCopyOnReadOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterVariableKernels(KernelRegistry& r) {
  r.Register<DisableCopyOnReadOp>(KernelDefBuilder("DisableCopyOnRead").Device(kDeviceCpu));
  r.Register<AssignOp>(KernelDefBuilder("Assign").Device(kDeviceCpu));
  r.Register<IsVariableInitializedOp>(KernelDefBuilder("IsVariableInitialized").Device(kDeviceCpu));
  r.Register<VarHandleOp>(KernelDefBuilder("VarHandleOp").Device(kDeviceCpu));
  r.Register<ReadVariableOp>(KernelDefBuilder("ReadVariableOp").Device(kDeviceCpu));
  r.Register<AssignVariableOp>(KernelDefBuilder("AssignVariableOp").Device(kDeviceCpu));
  r.Register<VarIsInitializedOp>(KernelDefBuilder("VarIsInitializedOp").Device(kDeviceCpu));
  ForEachType<float, double, int32_t, int64_t>([&](auto zero) {
    using T = decltype(zero);
    r.Register<AssignUpdateOp<T, true>>(KernelDefBuilder("AssignAdd").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<AssignUpdateOp<T, false>>(KernelDefBuilder("AssignSub").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<AssignUpdateVariableOp<T, true>>(
        KernelDefBuilder("AssignAddVariableOp").Device(kDeviceCpu).TypeConstraint<T>("dtype"));
    r.Register<AssignUpdateVariableOp<T, false>>(
        KernelDefBuilder("AssignSubVariableOp").Device(kDeviceCpu).TypeConstraint<T>("dtype"));
  });
}

}  // namespace tessera::cpu
