#include "kernels/util/broadcast_plan.h"

#include "graph/tensor_shape.h"

namespace tessera {

static_assert(BroadcastPlan::kMaxRank == TensorShape::kMaxRank);

BroadcastPlan MakeBroadcastPlan(const TensorShape& a, const TensorShape& b, const TensorShape& out) {
  const int r = out.rank();
  BroadcastPlan plan;
  int prev = -1;  // kind of the previous merged dim: bit 0 = a broadcast, bit 1 = b broadcast
  for (int i = 0; i < r; ++i) {
    int ia = a.rank() - r + i, ib = b.rank() - r + i;
    int64_t da = ia >= 0 ? a.dim(ia) : 1, db = ib >= 0 ? b.dim(ib) : 1, d = out.dim(i);
    if (d == 1) continue;
    int kind = (da == 1 ? 1 : 0) | (db == 1 ? 2 : 0);
    if (kind == prev) {
      plan.dims[plan.rank - 1] *= d;
    } else {
      plan.dims[plan.rank] = d;
      plan.a_stride[plan.rank] = (kind & 1) ? 0 : 1;
      plan.b_stride[plan.rank] = (kind & 2) ? 0 : 1;
      ++plan.rank;
      prev = kind;
    }
  }
  if (plan.rank == 0) {  // a scalar result
    plan.rank = 1;
    plan.dims[0] = 1;
    plan.a_stride[0] = plan.b_stride[0] = 1;
  }
  // Turn the 0/1 flags into element strides, innermost first.
  int64_t sa = 1, sb = 1;
  for (int i = plan.rank - 1; i >= 0; --i) {
    bool a_on = plan.a_stride[i] != 0, b_on = plan.b_stride[i] != 0;
    plan.a_stride[i] = a_on ? sa : 0;
    plan.b_stride[i] = b_on ? sb : 0;
    if (a_on) sa *= plan.dims[i];
    if (b_on) sb *= plan.dims[i];
  }
  return plan;
}

}  // namespace tessera
