// The fused_ops attr of the remapper's _FusedConv2D and _FusedMatMul (runtime/remapper.h):
// what the kernels apply to their product as they write it, on every device.
#pragma once

#include <string>

#include "kernels/op_kernel.h"

namespace tessera {

// "BiasAdd", or "BiasAdd,Relu" (then *relu): TensorFlow's list, comma-joined; for a kernel
// that passes `relu6` (the CPU's convolution), "BiasAdd,Relu6" too (then *relu6). Anything
// else is Unimplemented, naming the op.
inline Status ReadFusedOps(OpKernelConstruction* c, bool* relu, bool* relu6 = nullptr) {
  std::string fused;
  RETURN_IF_ERROR(c->GetAttr("fused_ops", &fused));
  if (relu6 != nullptr) *relu6 = fused == "BiasAdd,Relu6";
  if (fused != "BiasAdd" && fused != "BiasAdd,Relu" && !(relu6 != nullptr && *relu6)) {
    return errors::Unimplemented(c->node().op(), " of ", fused, ": only BiasAdd, and BiasAdd,Relu",
                                 relu6 != nullptr ? ", and BiasAdd,Relu6" : "");
  }
  *relu = fused == "BiasAdd,Relu";
  return Status::OK();
}

}  // namespace tessera
