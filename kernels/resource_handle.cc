#include "kernels/resource_handle.h"

namespace tessera {

Status OutputResourceHandle(OpKernelContext* ctx, const std::string& container, const std::string& name) {
  Tensor* handle;
  RETURN_IF_ERROR(ctx->allocate_output(0, TensorShape({2}), &handle));
  handle->data<std::string>()[0] = container;
  handle->data<std::string>()[1] = name;
  return Status::OK();
}

}  // namespace tessera
