#include "kernels/variable.h"

#include "kernels/op_kernel.h"

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

Status UpdateRefInputsFrom(OpKernelContext* ctx, std::vector<int> refs, const TensorShape& shape,
                           const std::function<void(const std::vector<Tensor*>&)>& fn, const Variable::CopyFn& copy,
                           std::vector<Tensor*> values) {
  if (refs.empty()) {
    fn(values);
    return Status::OK();
  }
  const int i = refs.back();
  refs.pop_back();
  return ctx->input_ref(i)->Update(
      ctx->input_ref_name(i),
      [&](Tensor* value) -> Status {
        if (value->shape() != shape) {
          return errors::InvalidArgument(ctx->input_ref_name(i), " and grad do not have the same shape: ",
                                         value->shape().DebugString(), " ", shape.DebugString());
        }
        values.insert(values.begin(), value);
        return UpdateRefInputsFrom(ctx, refs, shape, fn, copy, values);
      },
      copy);
}

}  // namespace

Status UpdateRefInputs(OpKernelContext* ctx, std::vector<int> refs, const TensorShape& shape,
                       const std::function<void(const std::vector<Tensor*>&)>& fn, const Variable::CopyFn& copy) {
  return UpdateRefInputsFrom(ctx, std::move(refs), shape, fn, copy, {});
}

std::string Variable::DebugString() const {
  return StrCat("Variable<", DataTypeName(dtype_), ", ", declared_shape_.DebugString(), ">");
}

}  // namespace tessera
