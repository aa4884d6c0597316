// The handles queue and accumulator ops hand out: a string vector [container, name] naming
// a resource in the step's ResourceMgr, as TensorFlow 1.x's string-ref handles do.
//
//   OP_REQUIRES_OK(ctx, OutputResourceHandle(ctx, container, name));          // the creating op
//   StatusOr<std::shared_ptr<Queue>> q = ResourceFromHandle<Queue>(ctx, "queue");  // its users (input 0)
//
// Thread-safe as the ResourceMgr is.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "kernels/op_kernel.h"
#include "kernels/resource_mgr.h"

namespace tessera {

// Output 0 becomes [container, name].
Status OutputResourceHandle(OpKernelContext* ctx, const std::string& container, const std::string& name);

// The resource input 0 names; InvalidArgument for a malformed handle, NotFound for none.
template <typename T>
StatusOr<std::shared_ptr<T>> ResourceFromHandle(OpKernelContext* ctx, std::string_view kind) {
  const Tensor& h = ctx->input(0);
  if (h.dtype() != DataType::kString || h.NumElements() != 2) {
    return errors::InvalidArgument("A ", kind, " handle is a string vector [container, name], got ",
                                   h.shape().DebugString());
  }
  if (ctx->resource_manager() == nullptr) return errors::Internal("A ", kind, " needs a resource manager");
  return ctx->resource_manager()->Lookup<T>(h.data<std::string>()[0], h.data<std::string>()[1]);
}

}  // namespace tessera
