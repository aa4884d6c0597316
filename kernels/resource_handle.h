// The handles that name a resource (a queue, an accumulator, a variable) in the step's
// ResourceMgr. They come in the two forms TensorFlow has: the string-ref ops of TF1
// (FIFOQueue, ConditionalAccumulator) output a string vector [container, name]; resource ops
// (VarHandleOp, FIFOQueueV2) a scalar of dtype resource whose one element encodes both.
//
//   OP_REQUIRES_OK(ctx, OutputResourceHandle(ctx, container, name));           // the creating op
//   StatusOr<std::shared_ptr<Queue>> q = ResourceFromHandle<Queue>(ctx, "queue");  // its users
//
// OutputResourceHandle writes the form the op's output 0 declares; the readers take either.
// Thread-safe as the ResourceMgr is.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "kernels/op_kernel.h"
#include "kernels/resource_mgr.h"

namespace tessera {

struct ResourceName {
  std::string container;
  std::string name;
};

// A resource tensor's element: "<length of container>:<container><name>".
std::string EncodeResourceHandle(const ResourceName& r);
StatusOr<ResourceName> DecodeResourceHandle(std::string_view encoded);

// Output 0 becomes [container, name] or a resource scalar, as the op declares.
Status OutputResourceHandle(OpKernelContext* ctx, const std::string& container, const std::string& name);

// The resource input `i` names; InvalidArgument for a malformed handle.
StatusOr<ResourceName> ResourceNameOfInput(OpKernelContext* ctx, std::string_view kind, int i = 0);

// The resource input `i` names; InvalidArgument for a malformed handle, NotFound for none.
template <typename T>
StatusOr<std::shared_ptr<T>> ResourceFromHandle(OpKernelContext* ctx, std::string_view kind, int i = 0) {
  ASSIGN_OR_RETURN(ResourceName r, ResourceNameOfInput(ctx, kind, i));
  if (ctx->resource_manager() == nullptr) return errors::Internal("A ", kind, " needs a resource manager");
  return ctx->resource_manager()->Lookup<T>(r.container, r.name);
}

}  // namespace tessera
