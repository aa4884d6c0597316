#include "kernels/resource_handle.h"

#include <charconv>

namespace tessera {

std::string EncodeResourceHandle(const ResourceName& r) {
  return StrCat(r.container.size(), ":", r.container, r.name);
}

StatusOr<ResourceName> DecodeResourceHandle(std::string_view encoded) {
  size_t colon = encoded.find(':');
  size_t length = 0;
  if (colon != std::string_view::npos) {
    auto [end, ec] = std::from_chars(encoded.data(), encoded.data() + colon, length);
    if (ec != std::errc() || end != encoded.data() + colon || length > encoded.size() - colon - 1) {
      colon = std::string_view::npos;
    }
  }
  if (colon == std::string_view::npos) {
    return errors::InvalidArgument("malformed resource handle '", encoded.substr(0, 64), "'");
  }
  std::string_view rest = encoded.substr(colon + 1);
  return ResourceName{std::string(rest.substr(0, length)), std::string(rest.substr(length))};
}

Status OutputResourceHandle(OpKernelContext* ctx, const std::string& container, const std::string& name) {
  Tensor* handle;
  if (ctx->op_kernel().output_type(0) == DataType::kResource) {
    RETURN_IF_ERROR(ctx->allocate_output(0, TensorShape(), &handle));
    handle->data<std::string>()[0] = EncodeResourceHandle({container, name});
    return Status::OK();
  }
  RETURN_IF_ERROR(ctx->allocate_output(0, TensorShape({2}), &handle));
  handle->data<std::string>()[0] = container;
  handle->data<std::string>()[1] = name;
  return Status::OK();
}

StatusOr<ResourceName> ResourceNameOfInput(OpKernelContext* ctx, std::string_view kind, int i) {
  const Tensor& h = ctx->input(i);
  if (h.dtype() == DataType::kResource && h.NumElements() == 1) return DecodeResourceHandle(h.data<std::string>()[0]);
  if (h.dtype() == DataType::kString && h.NumElements() == 2) {
    return ResourceName{h.data<std::string>()[0], h.data<std::string>()[1]};
  }
  return errors::InvalidArgument("A ", kind, " handle is a resource scalar or a string vector [container, name], got ",
                                 DataTypeName(h.dtype()), " ", h.shape().DebugString());
}

}  // namespace tessera
