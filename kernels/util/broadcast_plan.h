// BroadcastPlan: how two operands broadcast (numpy rules) onto an element-wise result, as
// operand strides over the result's dimensions after merging adjacent dimensions that
// broadcast the same way; a stride of 0 repeats an operand along that dimension. The CPU
// and GPU element-wise kernels both walk it, so this header is plain C++17 for nvcc.
#pragma once

#include <cstdint>

namespace tessera {

class TensorShape;

struct BroadcastPlan {
  static constexpr int kMaxRank = 8;
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t a_stride[kMaxRank] = {};
  int64_t b_stride[kMaxRank] = {};
};

// Precondition: `out` is the broadcast of `a` and `b`. The plan has rank >= 1 (a scalar
// result is one dimension of 1).
BroadcastPlan MakeBroadcastPlan(const TensorShape& a, const TensorShape& b, const TensorShape& out);

}  // namespace tessera
