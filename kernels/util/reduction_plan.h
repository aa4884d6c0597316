// ReductionPlan: what a reduction over a set of axes (Sum, Mean, Max) does to its input's
// shape. Adjacent axes that are all reduced (or all kept) are merged and size-1 axes
// dropped, which turns the input into alternating kept/reduced groups; a kernel folds each
// reduced group with one [outer, reduced, inner] pass. Shared by the CPU and GPU kernels.
#pragma once

#include <vector>

#include "graph/tensor.h"

namespace tessera {

struct ReductionPlan {
  TensorShape out_shape;      // with keep_dims, reduced axes stay as 1
  int64_t reduced_count = 1;  // elements folded into each output
  std::vector<int64_t> dims;  // the merged groups, outermost first
  std::vector<bool> reduced;  // whether each group is reduced
};

// `axes` is a scalar or vector of int32/int64 in [-rank, rank). InvalidArgument otherwise.
StatusOr<ReductionPlan> MakeReductionPlan(const TensorShape& in, const Tensor& axes, bool keep_dims);

// ArgMax over one non-empty dimension: the input as [outer, n, inner].
struct ArgMaxPlan {
  TensorShape out_shape;
  int64_t outer = 1, n = 0, inner = 1;
};
// `dimension` is a scalar int32/int64 in [-rank, rank) naming a dimension of size > 0.
StatusOr<ArgMaxPlan> MakeArgMaxPlan(const TensorShape& in, const Tensor& dimension);

}  // namespace tessera
