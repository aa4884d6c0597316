// Stacking elements into a batch along a new leading dimension, each padded out to the
// batch's row shape: what QueueDequeueMany, BatchDataset and PaddedBatchDataset share.
//
//   Tensor batch(DataType::kFloat, TensorShape({2, 3}));
//   FillWithScalar(zero, &batch);
//   CopyElementIntoBatch(a, 0, &batch);   // a: [2] -> row 0, third column stays padding
//
// Thread-safe for distinct destination tensors.
#pragma once

#include "graph/tensor.h"

namespace tessera {

// Sets every element of `t` to the scalar `value`. Precondition: same dtype.
void FillWithScalar(const Tensor& value, Tensor* t);

// Copies `element` into row `index` of `batch`; elements beyond the element's extent in
// each dimension keep their value (the padding). Preconditions: same dtype and rank one
// less than the batch, each dimension at most the batch row's, index in range.
void CopyElementIntoBatch(const Tensor& element, int64_t index, Tensor* batch);

}  // namespace tessera
