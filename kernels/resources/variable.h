// Variable: the state behind a VariableV2 node — a tensor that keeps its value across steps.
//
// Reads take a snapshot (a handle on the current buffer) under the variable's mutex; writes
// replace the buffer, or update it in place when no reader holds it, so a reader never sees
// a half-written value. All methods are thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "graph/tensor.h"
#include "kernels/resource_mgr.h"

namespace tessera {

class OpKernelContext;

class Variable : public ResourceBase {
 public:
  Variable(DataType dtype, TensorShape declared_shape);

  DataType dtype() const { return dtype_; }
  const TensorShape& declared_shape() const { return declared_shape_; }

  // FailedPrecondition "Attempting to use uninitialized value <name>" before the first write.
  StatusOr<Tensor> Read(std::string_view name) const;
  bool IsInitialized() const;
  void Write(Tensor value);
  // Copies a value whose buffer a reader shares, before an update changes it in place.
  using CopyFn = std::function<StatusOr<Tensor>(const Tensor&)>;
  // Applies fn(value) with the lock held, on a buffer no reader shares (copying it first
  // with `copy`, or a host copy when it is null, if one does). FailedPrecondition when
  // uninitialized.
  Status Update(std::string_view name, const std::function<Status(Tensor*)>& fn, const CopyFn& copy = nullptr);

  std::string DebugString() const override;

 private:
  const DataType dtype_;
  const TensorShape declared_shape_;
  mutable std::mutex mu_;
  Tensor value_;  // guarded by mu_; uninitialized until the first Write
};

// Locks the variables behind ctx's inputs `refs`, references or resource handles (the last
// first: every apply op takes them in the same order), checks that each holds a tensor of
// `shape`, and calls fn with their values in the order of `refs`. `copy` is as for
// Variable::Update.
Status UpdateRefInputs(OpKernelContext* ctx, std::vector<int> refs, const TensorShape& shape,
                       const std::function<void(const std::vector<Tensor*>&)>& fn,
                       const Variable::CopyFn& copy = nullptr);

struct ResourceName;
// The variable resource input `i` names (its name in `name`); FailedPrecondition, as in
// TensorFlow, when no variable of that name exists yet.
StatusOr<std::shared_ptr<Variable>> ResourceVariableOfInput(OpKernelContext* ctx, int i, ResourceName* name);

}  // namespace tessera
