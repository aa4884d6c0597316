#include "kernels/resources/variable.h"

#include "kernels/op_kernel.h"
#include "kernels/resource_handle.h"

namespace tessera {

Variable::Variable(DataType dtype, TensorShape declared_shape)
    : dtype_(dtype), declared_shape_(declared_shape) {}

StatusOr<Tensor> Variable::Read(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!value_.IsInitialized()) {
    return errors::FailedPrecondition("Attempting to use uninitialized value ", name);
  }
  return value_;
}

bool Variable::IsInitialized() const {
  std::lock_guard<std::mutex> lock(mu_);
  return value_.IsInitialized();
}

void Variable::Write(Tensor value) {
  std::lock_guard<std::mutex> lock(mu_);
  value_ = std::move(value);
}

Status Variable::Update(std::string_view name, const std::function<Status(Tensor*)>& fn, const CopyFn& copy) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!value_.IsInitialized()) {
    return errors::FailedPrecondition("Attempting to use uninitialized value ", name);
  }
  if (!value_.BufferIsUnshared()) {
    if (copy) {
      ASSIGN_OR_RETURN(value_, copy(value_));
    } else {
      value_ = value_.DeepCopy();
    }
  }
  return fn(&value_);
}

namespace {

struct LockedInput {
  Variable* var;
  std::string_view name;
};

Status UpdateFrom(std::vector<LockedInput> inputs, const TensorShape& shape,
                  const std::function<void(const std::vector<Tensor*>&)>& fn, const Variable::CopyFn& copy,
                  std::vector<Tensor*> values) {
  if (inputs.empty()) {
    fn(values);
    return Status::OK();
  }
  const LockedInput in = inputs.back();
  inputs.pop_back();
  return in.var->Update(
      in.name,
      [&](Tensor* value) -> Status {
        if (value->shape() != shape) {
          return errors::InvalidArgument(in.name, " and grad do not have the same shape: ",
                                         value->shape().DebugString(), " ", shape.DebugString());
        }
        values.insert(values.begin(), value);
        return UpdateFrom(inputs, shape, fn, copy, values);
      },
      copy);
}

}  // namespace

StatusOr<std::shared_ptr<Variable>> ResourceVariableOfInput(OpKernelContext* ctx, int i, ResourceName* name) {
  ASSIGN_OR_RETURN(*name, ResourceNameOfInput(ctx, "variable", i));
  if (ctx->resource_manager() == nullptr) return errors::Internal("A resource variable needs a resource manager");
  StatusOr<std::shared_ptr<Variable>> var = ctx->resource_manager()->Lookup<Variable>(name->container, name->name);
  if (var.status().code() == Code::kNotFound) {
    return errors::FailedPrecondition("Error while reading resource variable ", name->name, " from Container: ",
                                      name->container.empty() ? "localhost" : name->container,
                                      ". This could mean that the variable was uninitialized.");
  }
  return var;
}

Status UpdateRefInputs(OpKernelContext* ctx, std::vector<int> refs, const TensorShape& shape,
                       const std::function<void(const std::vector<Tensor*>&)>& fn, const Variable::CopyFn& copy) {
  std::vector<LockedInput> inputs;
  std::vector<std::shared_ptr<Variable>> held;
  std::vector<std::string> names;
  names.reserve(refs.size());
  for (int i : refs) {
    if (ctx->op_kernel().input_is_ref(i)) {
      inputs.push_back({ctx->input_ref(i), ctx->input_ref_name(i)});
      continue;
    }
    ResourceName name;
    ASSIGN_OR_RETURN(std::shared_ptr<Variable> var, ResourceVariableOfInput(ctx, i, &name));
    names.push_back(std::move(name.name));
    inputs.push_back({var.get(), names.back()});
    held.push_back(std::move(var));
  }
  return UpdateFrom(std::move(inputs), shape, fn, copy, {});
}

std::string Variable::DebugString() const {
  return StrCat("Variable<", DataTypeName(dtype_), ", ", declared_shape_.DebugString(), ">");
}

}  // namespace tessera
