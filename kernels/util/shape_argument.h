// Shapes given to a kernel as tensors (BroadcastTo's `shape`, BroadcastGradientArgs' s0 and
// s1), read and checked the same way by every device's kernels.
#pragma once

#include <string_view>

#include "graph/tensor.h"

namespace tessera {

// InvalidArgument, naming the argument `what`, unless `t` is an int32/int64 vector of
// sizes >= 0.
StatusOr<TensorShape> ShapeFromVector(const Tensor& t, std::string_view what);

// BroadcastTo's target: `shape` read as above, and InvalidArgument unless `input`
// broadcasts to it.
StatusOr<TensorShape> BroadcastToShape(const Tensor& input, const Tensor& shape);

}  // namespace tessera
