#include "kernels/variable.h"

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

Status Variable::Update(std::string_view name, const std::function<Status(Tensor*)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!value_.IsInitialized()) {
    return errors::FailedPrecondition("Attempting to use uninitialized value ", name);
  }
  if (!value_.BufferIsUnshared()) value_ = value_.DeepCopy();
  return fn(&value_);
}

std::string Variable::DebugString() const {
  return StrCat("Variable<", DataTypeName(dtype_), ", ", declared_shape_.DebugString(), ">");
}

}  // namespace tessera
