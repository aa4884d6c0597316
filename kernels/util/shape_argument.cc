#include "kernels/util/shape_argument.h"

#include "graph/shape_inference.h"

namespace tessera {

StatusOr<TensorShape> ShapeFromVector(const Tensor& t, std::string_view what) {
  if (t.rank() != 1 || (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64)) {
    return errors::InvalidArgument(what, " must be an int32 or int64 vector, got ", DataTypeName(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  std::vector<int64_t> dims = IntTensorValues(t);
  for (int64_t d : dims) {
    if (d < 0) return errors::InvalidArgument(what, " has a negative dimension ", d);
  }
  return TensorShape::Make(dims);
}
StatusOr<TensorShape> BroadcastToShape(const Tensor& input, const Tensor& shape) {
  ASSIGN_OR_RETURN(TensorShape target, ShapeFromVector(shape, "shape"));
  StatusOr<TensorShape> merged = InferenceContext::BroadcastShapes(input.shape(), target);
  if (!merged.ok() || !(*merged == target)) {
    return errors::InvalidArgument("Cannot broadcast a tensor of shape ", input.shape().DebugString(), " to shape ",
                                   target.DebugString());
  }
  return target;
}

}  // namespace tessera
