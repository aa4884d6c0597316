// Schemas of const, Placeholder, Identity, Reshape, shapes and sizes, Fill, BroadcastTo, ConcatV2 and Split.
#include "graph/ops/register.h"
#include "graph/shape_inference.h"

namespace tessera {
namespace {

Status ConstShape(InferenceContext& c) {
  Tensor value;
  DataType dtype = DataType::kInvalid;
  RETURN_IF_ERROR(c.GetAttr("value", &value));
  RETURN_IF_ERROR(c.GetAttr("dtype", &dtype));
  if (value.dtype() != dtype) {
    return errors::InvalidArgument("Const value has dtype ", DataTypeName(value.dtype()),
                                   " but attr dtype is ", DataTypeName(dtype));
  }
  c.set_output(0, value.shape());
  return Status::OK();
}

Status ReshapeShape(InferenceContext& c) {
  const Tensor* shape = c.input_tensor(1);
  const TensorShape& in = c.input(0);
  if (!c.input(1).unknown_rank() && c.input(1).rank() > 1) {
    return errors::InvalidArgument("Shape must be rank 1 but is rank ", c.input(1).rank());
  }
  if (shape == nullptr) {
    if (!c.input(1).unknown_rank() && c.input(1).rank() == 1 && c.input(1).dim(0) >= 0) {
      std::vector<int64_t> dims(static_cast<size_t>(c.input(1).dim(0)), -1);
      ASSIGN_OR_RETURN(TensorShape s, TensorShape::Make(dims));
      c.set_output(0, s);
    }
    return Status::OK();
  }
  std::vector<int64_t> dims = IntTensorValues(*shape);
  int unknown = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (unknown >= 0) return errors::InvalidArgument("Can only specify one unknown dimension");
      unknown = static_cast<int>(i);
    } else if (dims[i] < 0) {
      return errors::InvalidArgument("Size ", i, " must be non-negative, not ", dims[i]);
    } else if (__builtin_mul_overflow(known, dims[i], &known)) {
      return errors::InvalidArgument("The requested shape ", TensorShape(dims).DebugString(),
                                     " has more than 2^63-1 elements");
    }
  }
  int64_t n = in.num_elements();
  if (n >= 0) {
    if (unknown >= 0) {
      if (known == 0 || n % known != 0) {
        return errors::InvalidArgument("Cannot reshape a tensor with ", n,
                                       " elements to shape ", TensorShape(dims).DebugString());
      }
      dims[unknown] = n / known;
    } else if (known != n) {
      return errors::InvalidArgument("Cannot reshape a tensor with ", n, " elements to shape ",
                                     TensorShape(dims).DebugString(), " (", known, " elements)");
    }
  }
  ASSIGN_OR_RETURN(TensorShape s, TensorShape::Make(dims));
  c.set_output(0, s);
  return Status::OK();
}

Status TwoVectorsShape(InferenceContext& c) {
  c.set_output(0, TensorShape({-1}));
  c.set_output(1, TensorShape({-1}));
  return Status::OK();
}

// The shape is the value of input 1 when it is a constant; else of its length's rank.
Status BroadcastToShape(InferenceContext& c) {
  const Tensor* shape = c.input_tensor(1);
  if (shape != nullptr) {
    ASSIGN_OR_RETURN(TensorShape s, TensorShape::Make(IntTensorValues(*shape)));
    c.set_output(0, s);
  } else if (!c.input(1).unknown_rank() && c.input(1).rank() == 1 && c.input(1).dim(0) >= 0 &&
             c.input(1).dim(0) <= TensorShape::kMaxRank) {
    c.set_output(0, TensorShape(std::vector<int64_t>(c.input(1).dim(0), -1)));
  }
  return Status::OK();
}

Status FillShape(InferenceContext& c) {
  if (!c.input(1).unknown_rank() && c.input(1).rank() != 0) {
    return errors::InvalidArgument("value must be a scalar, but has shape ",
                                   c.input(1).DebugString());
  }
  const Tensor* dims = c.input_tensor(0);
  if (dims != nullptr) {
    std::vector<int64_t> d = IntTensorValues(*dims);
    for (int64_t x : d) {
      if (x < 0) return errors::InvalidArgument("Fill dimensions must be >= 0, got ", x);
    }
    ASSIGN_OR_RETURN(TensorShape s, TensorShape::Make(d));
    c.set_output(0, s);
  }
  return Status::OK();
}

Status ShapeShape(InferenceContext& c) {
  const TensorShape& in = c.input(0);
  c.set_output(0, TensorShape({in.unknown_rank() ? -1 : in.rank()}));
  return Status::OK();
}

// The axis a scalar input holds, in [0, rank); -1 when not known until run time.
StatusOr<int> ConstantAxis(InferenceContext& c, int input, int rank) {
  const Tensor* t = c.input_tensor(input);
  if (t == nullptr || rank < 0) return -1;
  if (t->NumElements() != 1) return errors::InvalidArgument("axis must be a scalar, got ", t->shape().DebugString());
  const int64_t axis = IntTensorValues(*t)[0];
  if (axis < -rank || axis >= rank) {
    return errors::InvalidArgument("axis ", axis, " is out of range for a tensor of rank ", rank);
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// Outputs shaped like `value` with dimension `axis` replaced by each of `sizes` (-1: unknown).
void SplitShapes(InferenceContext& c, const TensorShape& value, int axis, const std::vector<int64_t>& sizes) {
  for (int i = 0; i < c.num_outputs(); ++i) {
    if (value.unknown_rank()) continue;
    std::vector<int64_t> dims(value.dims().begin(), value.dims().end());
    if (axis < 0) {
      dims.assign(dims.size(), -1);
    } else {
      dims[axis] = sizes[i];
    }
    c.set_output(i, TensorShape(dims));
  }
}

Status SplitShape(InferenceContext& c) {
  const TensorShape& value = c.input(1);
  const int rank = value.unknown_rank() ? -1 : value.rank();
  ASSIGN_OR_RETURN(int axis, ConstantAxis(c, 0, rank));
  const int n = c.num_outputs();
  int64_t size = -1;
  if (axis >= 0 && value.dim(axis) >= 0) {
    if (value.dim(axis) % n != 0) {
      return errors::InvalidArgument("Number of ways to split should evenly divide the split dimension, but got "
                                     "split_dim ", axis, " (size = ", value.dim(axis), ") and num_split ", n);
    }
    size = value.dim(axis) / n;
  }
  SplitShapes(c, value, axis, std::vector<int64_t>(n, size));
  return Status::OK();
}

Status SplitVShape(InferenceContext& c) {
  const TensorShape& value = c.input(0);
  const int rank = value.unknown_rank() ? -1 : value.rank();
  ASSIGN_OR_RETURN(int axis, ConstantAxis(c, 2, rank));
  std::vector<int64_t> sizes(c.num_outputs(), -1);
  if (const Tensor* t = c.input_tensor(1); t != nullptr) {
    sizes = IntTensorValues(*t);
    if (static_cast<int>(sizes.size()) != c.num_outputs()) {
      return errors::InvalidArgument("size_splits has ", sizes.size(), " entries for ", c.num_outputs(), " outputs");
    }
  }
  SplitShapes(c, value, axis, sizes);
  return Status::OK();
}

Status ConcatShape(InferenceContext& c) {
  const int n = c.num_inputs() - 1;
  const TensorShape& first = c.input(0);
  if (first.unknown_rank()) return Status::OK();
  ASSIGN_OR_RETURN(int axis, ConstantAxis(c, n, first.rank()));
  if (axis < 0) return Status::OK();
  std::vector<int64_t> dims(first.dims().begin(), first.dims().end());
  dims[axis] = 0;
  for (int i = 0; i < n; ++i) {
    const TensorShape& s = c.input(i);
    if (s.unknown_rank()) return Status::OK();
    if (s.rank() != first.rank()) {
      return errors::InvalidArgument("ConcatV2 inputs must have the same rank: input 0 is ", first.DebugString(),
                                     ", input ", i, " is ", s.DebugString());
    }
    for (int d = 0; d < s.rank(); ++d) {
      if (d == axis) {
        if (dims[d] >= 0 && s.dim(d) >= 0 && __builtin_add_overflow(dims[d], s.dim(d), &dims[d])) {
          return errors::InvalidArgument("ConcatV2's output would have more than 2^63-1 elements along axis ", axis);
        }
        if (s.dim(d) < 0) dims[d] = -1;
      } else if (dims[d] < 0) {
        dims[d] = s.dim(d);
      } else if (s.dim(d) >= 0 && s.dim(d) != dims[d]) {
        return errors::InvalidArgument("ConcatV2 inputs must match in every dimension but axis ", axis,
                                       ": input 0 is ", first.DebugString(), ", input ", i, " is ", s.DebugString());
      }
    }
  }
  c.set_output(0, TensorShape(dims));
  return Status::OK();
}

}  // namespace

void RegisterArrayOps(OpRegistry& r) {
  RegisterCoreOp(r, OpDefBuilder("Const").Output("output: dtype").Attr("value: tensor").Attr("dtype: type")
                  .SetShapeFn(ConstShape));
  RegisterCoreOp(r, OpDefBuilder("Placeholder").Output("output: dtype").Attr("dtype: type")
                  .Attr("shape: shape = unknown").SetShapeFn(ShapeFromAttr));
  RegisterCoreOp(r, OpDefBuilder("Identity").Input("input: T").Output("output: T").Attr("T: type")
                  .SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("NoOp").SetShapeFn(ScalarShape));

  RegisterCoreOp(r, OpDefBuilder("Reshape").Input("tensor: T").Input("shape: Tshape").Output("output: T")
                  .Attr("T: type").Attr("Tshape: {int32, int64} = int32").SetShapeFn(ReshapeShape));

  RegisterCoreOp(r, OpDefBuilder("BroadcastGradientArgs").Input("s0: T").Input("s1: T").Output("r0: T")
                  .Output("r1: T").Attr("T: {int32, int64} = int32").SetShapeFn(TwoVectorsShape));
  RegisterCoreOp(r, OpDefBuilder("BroadcastTo").Input("input: T").Input("shape: Tidx").Output("output: T")
                  .Attr("T: type").Attr("Tidx: {int32, int64} = int32").SetShapeFn(BroadcastToShape));
  RegisterCoreOp(r, OpDefBuilder("Size").Input("input: T").Output("output: out_type").Attr("T: type")
                  .Attr("out_type: {int32, int64} = int32").SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("Fill").Input("dims: index_type").Input("value: T").Output("output: T")
                  .Attr("T: type").Attr("index_type: {int32, int64} = int32").SetShapeFn(FillShape));
  for (const char* op : {"ZerosLike", "OnesLike"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: T").Output("y: T")
                    .Attr("T: {float32, float64, int32, int64, bool}").SetShapeFn(UnchangedShape));
  }
  RegisterCoreOp(r, OpDefBuilder("ConcatV2").Input("values: N * T").Input("axis: Tidx").Output("output: T")
                  .Attr("N: int >= 2").Attr("T: type").Attr("Tidx: {int32, int64} = int32").SetShapeFn(ConcatShape));
  RegisterCoreOp(r, OpDefBuilder("Split").Input("split_dim: int32").Input("value: T").Output("output: num_split * T")
                  .Attr("num_split: int >= 1").Attr("T: type").SetShapeFn(SplitShape));
  RegisterCoreOp(r, OpDefBuilder("SplitV").Input("value: T").Input("size_splits: Tlen").Input("split_dim: int32")
                  .Output("output: num_split * T").Attr("num_split: int >= 1").Attr("T: type")
                  .Attr("Tlen: {int32, int64} = int64").SetShapeFn(SplitVShape));
  RegisterCoreOp(r, OpDefBuilder("Shape").Input("input: T").Output("output: out_type").Attr("T: type")
                  .Attr("out_type: {int32, int64} = int32").SetShapeFn(ShapeShape));
}

}  // namespace tessera
