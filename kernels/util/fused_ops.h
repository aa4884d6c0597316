// The fused_ops attr of the remapper's _FusedConv2D and _FusedMatMul (runtime/remapper.h):
// what the kernels apply to their product as they write it, on every device.
#pragma once

#include <string>

#include "kernels/op_kernel.h"

namespace tessera {

// "BiasAdd", or "BiasAdd,Relu" (then *relu): TensorFlow's list, comma-joined. Anything else
// is Unimplemented, naming the op.
inline Status ReadFusedOps(OpKernelConstruction* c, bool* relu) {
  std::string fused;
  RETURN_IF_ERROR(c->GetAttr("fused_ops", &fused));
  if (fused != "BiasAdd" && fused != "BiasAdd,Relu") {
    return errors::Unimplemented(c->node().op(), " of ", fused, ": only BiasAdd, and BiasAdd,Relu");
  }
  *relu = fused == "BiasAdd,Relu";
  return Status::OK();
}

}  // namespace tessera
