// The input check that the CPU and GPU kernels of SparseSoftmaxCrossEntropyWithLogits share:
// 2-D logits and one label per row.
#pragma once

#include "graph/tensor.h"

namespace tessera {

inline Status CheckSparseXentInputs(const Tensor& logits, const Tensor& labels) {
  if (logits.rank() != 2) {
    return errors::InvalidArgument("logits must be 2-D, but got shape ", logits.shape().DebugString());
  }
  if (labels.rank() != 1 || labels.dim(0) != logits.dim(0)) {
    return errors::InvalidArgument("labels must be 1-D with as many entries as logits has rows: logits ",
                                   logits.shape().DebugString(), ", labels ", labels.shape().DebugString());
  }
  return Status::OK();
}

}  // namespace tessera
