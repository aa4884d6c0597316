// Variable: the state behind a VariableV2 node — a tensor that keeps its value across steps.
//
// Reads take a snapshot (a handle on the current buffer) under the variable's mutex; writes
// replace the buffer, or update it in place when no reader holds it, so a reader never sees
// a half-written value. All methods are thread-safe.
#pragma once

#include <functional>
#include <mutex>

#include "graph/tensor.h"
#include "kernels/resource_mgr.h"

namespace tessera {

class Variable : public ResourceBase {
 public:
  Variable(DataType dtype, TensorShape declared_shape);

  DataType dtype() const { return dtype_; }
  const TensorShape& declared_shape() const { return declared_shape_; }

  // FailedPrecondition "Attempting to use uninitialized value <name>" before the first write.
  StatusOr<Tensor> Read(std::string_view name) const;
  bool IsInitialized() const;
  void Write(Tensor value);
  // Applies fn(value) with the lock held, on a buffer no reader shares (copying it first if
  // one does). FailedPrecondition when uninitialized.
  Status Update(std::string_view name, const std::function<Status(Tensor*)>& fn);

  std::string DebugString() const override;

 private:
  const DataType dtype_;
  const TensorShape declared_shape_;
  mutable std::mutex mu_;
  Tensor value_;  // guarded by mu_; uninitialized until the first Write
};

}  // namespace tessera
