// FunctionRuntime: how a kernel runs the body of a function attr (graph/function.h), as
// MapDataset runs its `f` once per element. The runtime implements it; a kernel reaches it
// through OpKernelContext::function_runtime().
//
//   StatusOr<std::unique_ptr<const InstantiatedFunction>> f =
//       ctx->function_runtime()->Instantiate(fn, ctx->device(), ctx->resource_manager());
//   std::vector<Tensor> rets;
//   Status s = (*f)->Run({x}, &rets);
//
// Instantiate is thread-safe, and one InstantiatedFunction may Run concurrently on many
// threads.
#pragma once

#include <memory>
#include <vector>

#include "graph/function.h"
#include "kernels/device_base.h"
#include "kernels/resource_mgr.h"

namespace tessera {

class InstantiatedFunction {
 public:
  virtual ~InstantiatedFunction() = default;
  // Runs the body once, on the calling thread. InvalidArgument when the arguments' number
  // or dtypes differ from the body's Placeholders.
  virtual Status Run(std::vector<Tensor> args, std::vector<Tensor>* rets) const = 0;
  virtual const std::vector<DataType>& arg_types() const = 0;
  virtual const FunctionSignature& signature() const = 0;
};

class FunctionRuntime {
 public:
  virtual ~FunctionRuntime() = default;
  // Builds the body's kernels on `device`; stateful ops in it use `resources`. Both must
  // outlive the result.
  virtual StatusOr<std::unique_ptr<const InstantiatedFunction>> Instantiate(const FunctionDef& fn,
                                                                             DeviceBase* device,
                                                                             ResourceMgr* resources) const = 0;
};

}  // namespace tessera
