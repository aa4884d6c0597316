#include "kernels/util/reduction_plan.h"

namespace tessera {

StatusOr<ReductionPlan> MakeReductionPlan(const TensorShape& in, const Tensor& axes, bool keep_dims) {
  if (axes.rank() > 1) {
    return errors::InvalidArgument("axes must be a scalar or vector, got shape ", axes.shape().DebugString());
  }
  const int rank = in.rank();
  std::vector<bool> reduce(rank, false);
  for (int64_t a : IntTensorValues(axes)) {
    if (a < -rank || a >= rank) {
      return errors::InvalidArgument("Invalid reduction dimension ", a, " for input with ", rank, " dimensions.");
    }
    reduce[a < 0 ? a + rank : a] = true;
  }
  ReductionPlan plan;
  for (int i = 0; i < rank; ++i) {
    if (!reduce[i]) {
      plan.out_shape.AddDim(in.dim(i));
    } else {
      plan.reduced_count *= in.dim(i);
      if (keep_dims) plan.out_shape.AddDim(1);
    }
  }
  for (int i = 0; i < rank; ++i) {
    if (in.dim(i) == 1) continue;
    if (!plan.dims.empty() && plan.reduced.back() == reduce[i]) {
      plan.dims.back() *= in.dim(i);
    } else {
      plan.dims.push_back(in.dim(i));
      plan.reduced.push_back(reduce[i]);
    }
  }
  return plan;
}

StatusOr<ArgMaxPlan> MakeArgMaxPlan(const TensorShape& in, const Tensor& dimension) {
  if (dimension.NumElements() != 1) return errors::InvalidArgument("dimension must be a scalar");
  int64_t d = IntTensorValues(dimension)[0];
  if (d < -in.rank() || d >= in.rank()) {
    return errors::InvalidArgument("Expected dimension in the range [", -in.rank(), ", ", in.rank(), "), but got ", d);
  }
  if (d < 0) d += in.rank();
  if (in.dim(static_cast<int>(d)) == 0) {
    return errors::InvalidArgument("Reduction axis ", d, " is empty in shape ", in.DebugString());
  }
  ArgMaxPlan plan;
  plan.n = in.dim(static_cast<int>(d));
  for (int i = 0; i < in.rank(); ++i) {
    if (i == d) continue;
    plan.out_shape.AddDim(in.dim(i));
    (i < d ? plan.outer : plan.inner) *= in.dim(i);
  }
  return plan;
}

}  // namespace tessera
