// Schemas of const, Placeholder, Identity, Reshape, shapes and sizes, Fill, BroadcastTo, ConcatV2,
// Split, and the slicing and rearranging ops TensorFlow's graphs use (Pack, Unpack, Slice,
// StridedSlice, Squeeze, ExpandDims, Transpose, Tile, Pad, Gather).
#include <algorithm>

#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"
#include "graph/strided_slice.h"

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
  // One -1 is whatever the other sizes leave, as the kernel reads it.
  if (axis >= 0 && value.dim(axis) >= 0 && std::count(sizes.begin(), sizes.end(), -1) == 1) {
    int64_t rest = value.dim(axis);
    for (int64_t s : sizes) rest -= s == -1 ? 0 : s;
    if (rest >= 0) *std::find(sizes.begin(), sizes.end(), -1) = rest;
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

// An axis in [-rank, rank) as a non-negative one.
StatusOr<int> CanonicalAxis(int64_t axis, int rank, std::string_view what) {
  if (axis < -rank || axis >= rank) {
    return errors::InvalidArgument(what, " ", axis, " is out of range for rank ", rank);
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Status PackShape(InferenceContext& c) {
  TensorShape merged = c.input(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(merged, InferenceContext::Merge(merged, c.input(i)));
  }
  if (merged.unknown_rank()) return Status::OK();
  int64_t axis = 0;
  RETURN_IF_ERROR(c.GetAttr("axis", &axis));
  ASSIGN_OR_RETURN(int at, CanonicalAxis(axis, merged.rank() + 1, "Pack axis"));
  std::vector<int64_t> dims(merged.dims().begin(), merged.dims().end());
  dims.insert(dims.begin() + at, c.num_inputs());
  ASSIGN_OR_RETURN(TensorShape out, TensorShape::Make(dims));
  c.set_output(0, out);
  return Status::OK();
}

Status SqueezeShape(InferenceContext& c) {
  const TensorShape& in = c.input(0);
  if (in.unknown_rank()) return Status::OK();
  std::vector<int64_t> axes;
  RETURN_IF_ERROR(c.GetAttr("squeeze_dims", &axes));
  std::vector<bool> drop(static_cast<size_t>(in.rank()), false);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int at, CanonicalAxis(a, in.rank(), "Squeeze dimension"));
    if (in.dim(at) > 1 || in.dim(at) == 0) {
      return errors::InvalidArgument("Can not squeeze dim[", at, "], expected a dimension of 1, got ", in.dim(at));
    }
    drop[at] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (axes.empty() && in.dim(i) < 0) return Status::OK();  // whether it goes is known only when run
    if (!(drop[i] || (axes.empty() && in.dim(i) == 1))) dims.push_back(in.dim(i));
  }
  ASSIGN_OR_RETURN(TensorShape out, TensorShape::Make(dims));
  c.set_output(0, out);
  return Status::OK();
}

Status ExpandDimsShape(InferenceContext& c) {
  const TensorShape& in = c.input(0);
  const Tensor* dim = c.input_tensor(1);
  if (in.unknown_rank() || dim == nullptr) return Status::OK();
  if (dim->NumElements() != 1) return errors::InvalidArgument("'dim' must be a tensor with a single value");
  ASSIGN_OR_RETURN(int at, CanonicalAxis(IntTensorValues(*dim)[0], in.rank() + 1, "ExpandDims dim"));
  std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
  dims.insert(dims.begin() + at, 1);
  ASSIGN_OR_RETURN(TensorShape out, TensorShape::Make(dims));
  c.set_output(0, out);
  return Status::OK();
}

Status TransposeShape(InferenceContext& c) {
  const TensorShape& in = c.input(0);
  const Tensor* perm = c.input_tensor(1);
  if (in.unknown_rank()) return Status::OK();
  if (perm == nullptr) {
    std::vector<int64_t> dims(static_cast<size_t>(in.rank()), -1);
    c.set_output(0, TensorShape(dims));
    return Status::OK();
  }
  std::vector<int64_t> p = IntTensorValues(*perm);
  if (static_cast<int>(p.size()) != in.rank()) {
    return errors::InvalidArgument("transpose expects a vector of size ", in.rank(), ". But input(1) is a vector of size ",
                                   p.size());
  }
  std::vector<int64_t> dims;
  for (int64_t d : p) {
    ASSIGN_OR_RETURN(int at, CanonicalAxis(d, in.rank(), "Transpose permutation entry"));
    dims.push_back(in.dim(at));
  }
  c.set_output(0, TensorShape(dims));
  return Status::OK();
}

Status SliceShape(InferenceContext& c) {
  const TensorShape& in = c.input(0);
  const Tensor* begin = c.input_tensor(1);
  const Tensor* size = c.input_tensor(2);
  if (begin == nullptr || size == nullptr || !in.IsFullyDefined()) return Status::OK();
  std::vector<int64_t> b = IntTensorValues(*begin), n = IntTensorValues(*size);
  if (static_cast<int>(b.size()) != in.rank() || n.size() != b.size()) {
    return errors::InvalidArgument("Expected begin and size arguments to be 1-D tensors of size ", in.rank());
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    const int64_t len = n[i] == -1 ? in.dim(i) - b[i] : n[i];
    if (b[i] < 0 || len < 0 || b[i] > in.dim(i) || len > in.dim(i) - b[i]) {
      return errors::InvalidArgument("Expected begin[", i, "] in [0, ", in.dim(i), "] and size[", i, "] in [0, ",
                                     in.dim(i) - b[i], "], but got ", b[i], " and ", n[i]);
    }
    dims.push_back(len);
  }
  c.set_output(0, TensorShape(dims));
  return Status::OK();
}

Status TileShape(InferenceContext& c) {
  const TensorShape& in = c.input(0);
  const Tensor* multiples = c.input_tensor(1);
  if (in.unknown_rank()) return Status::OK();
  std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
  if (multiples == nullptr) {
    std::fill(dims.begin(), dims.end(), -1);
    c.set_output(0, TensorShape(dims));
    return Status::OK();
  }
  std::vector<int64_t> m = IntTensorValues(*multiples);
  if (static_cast<int>(m.size()) != in.rank()) {
    return errors::InvalidArgument("Expected multiples argument to be a vector of length ", in.rank(), " but got length ",
                                   m.size());
  }
  for (int i = 0; i < in.rank(); ++i) {
    if (m[i] < 0) return errors::InvalidArgument("Expected multiples[", i, "] >= 0, but got ", m[i]);
    if (dims[i] >= 0 && __builtin_mul_overflow(dims[i], m[i], &dims[i])) {
      return errors::InvalidArgument("Tiling dimension ", i, " overflows");
    }
  }
  ASSIGN_OR_RETURN(TensorShape out, TensorShape::Make(dims));
  c.set_output(0, out);
  return Status::OK();
}

Status StridedSliceShape(InferenceContext& c) {
  const Tensor* begin = c.input_tensor(1);
  const Tensor* end = c.input_tensor(2);
  const Tensor* strides = c.input_tensor(3);
  const TensorShape& in = c.input(0);
  if (begin == nullptr || end == nullptr || strides == nullptr || in.unknown_rank()) return Status::OK();
  StridedSliceMasks m;
  RETURN_IF_ERROR(c.GetAttr("begin_mask", &m.begin));
  RETURN_IF_ERROR(c.GetAttr("end_mask", &m.end));
  RETURN_IF_ERROR(c.GetAttr("ellipsis_mask", &m.ellipsis));
  RETURN_IF_ERROR(c.GetAttr("new_axis_mask", &m.new_axis));
  RETURN_IF_ERROR(c.GetAttr("shrink_axis_mask", &m.shrink_axis));
  // Unknown input dims resolved with a size in their place; what the slice takes of one
  // stays unknown (as TensorFlow has it), the rest is known. A shrunk unknown dim is gone
  // from the result either way.
  TensorShape filled = in;
  for (int i = 0; i < filled.rank(); ++i) {
    if (filled.dim(i) < 0) filled.set_dim(i, int64_t{1} << 20);
  }
  StatusOr<StridedSliceRange> r =
      ResolveStridedSlice(filled, IntTensorValues(*begin), IntTensorValues(*end), IntTensorValues(*strides), m);
  if (!r.ok()) return in.IsFullyDefined() ? r.status() : Status::OK();  // else the step will say
  TensorShape out = r->result;
  for (int i = 0; i < out.rank(); ++i) {
    if (r->result_source[i] >= 0 && in.dim(r->result_source[i]) < 0) out.set_dim(i, TensorShape::kUnknownDim);
  }
  c.set_output(0, out);
  return Status::OK();
}

Status UnpackShape(InferenceContext& c) {
  const TensorShape& in = c.input(0);
  if (in.unknown_rank()) return Status::OK();
  int64_t axis = 0;
  RETURN_IF_ERROR(c.GetAttr("axis", &axis));
  ASSIGN_OR_RETURN(int at, CanonicalAxis(axis, in.rank(), "Unpack axis"));
  if (in.dim(at) >= 0 && in.dim(at) != c.num_outputs()) {
    return errors::InvalidArgument("Dimension ", at, " of the input is ", in.dim(at), ", not num = ", c.num_outputs());
  }
  std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
  dims.erase(dims.begin() + at);
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, TensorShape(dims));
  return Status::OK();
}

Status PadShape(InferenceContext& c) {
  const TensorShape& in = c.input(0);
  const Tensor* paddings = c.input_tensor(1);
  if (in.unknown_rank()) return Status::OK();
  std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
  if (paddings == nullptr) {
    std::fill(dims.begin(), dims.end(), -1);
    c.set_output(0, TensorShape(dims));
    return Status::OK();
  }
  if (paddings->shape() != TensorShape({in.rank(), 2})) {
    return errors::InvalidArgument("paddings must be a matrix with 2 columns and a row per input dimension (",
                                   in.rank(), "), got ", paddings->shape().DebugString());
  }
  std::vector<int64_t> p = IntTensorValues(*paddings);
  for (int i = 0; i < in.rank(); ++i) {
    if (p[2 * i] < 0 || p[2 * i + 1] < 0) {
      return errors::InvalidArgument("Paddings must be non-negative: ", p[2 * i], " ", p[2 * i + 1]);
    }
    if (dims[i] >= 0 && (__builtin_add_overflow(dims[i], p[2 * i], &dims[i]) ||
                         __builtin_add_overflow(dims[i], p[2 * i + 1], &dims[i]))) {
      return errors::InvalidArgument("Padding dimension ", i, " overflows");
    }
  }
  ASSIGN_OR_RETURN(TensorShape out, TensorShape::Make(dims));
  c.set_output(0, out);
  return Status::OK();
}

// params[:axis] + indices + params[axis + 1:], for Gather (axis 0) and GatherV2.
Status GatherShape(InferenceContext& c) {
  const TensorShape& params = c.input(0);
  const TensorShape& indices = c.input(1);
  int64_t batch_dims = 0;
  if (c.num_inputs() == 3) RETURN_IF_ERROR(c.GetAttr("batch_dims", &batch_dims));
  if (batch_dims != 0) return errors::Unimplemented("GatherV2 with batch_dims = ", batch_dims);
  if (params.unknown_rank() || indices.unknown_rank()) return Status::OK();
  if (params.rank() == 0) return errors::InvalidArgument("params must be at least 1 dimensional");
  int axis = 0;
  if (c.num_inputs() == 3) {
    ASSIGN_OR_RETURN(axis, ConstantAxis(c, 2, params.rank()));
    if (axis < 0) return Status::OK();
  }
  std::vector<int64_t> dims(params.dims().begin(), params.dims().begin() + axis);
  dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
  dims.insert(dims.end(), params.dims().begin() + axis + 1, params.dims().end());
  c.set_output(0, TensorShape(dims));
  return Status::OK();
}

}  // namespace

void RegisterArrayOps(OpRegistry& r) {
  RegisterCoreOp(r, OpDefBuilder("Const").Output("output: dtype").Attr("value: tensor").Attr("dtype: type")
                  .SetShapeFn(ConstShape));
  RegisterCoreOp(r, OpDefBuilder("Placeholder").Output("output: dtype").Attr("dtype: type")
                  .Attr("shape: shape = unknown").SetShapeFn(ShapeFromAttr));
  // A placeholder that, when not fed, passes its input on.
  RegisterCoreOp(r, OpDefBuilder("PlaceholderWithDefault").Input("input: dtype").Output("output: dtype")
                  .Attr("dtype: type").Attr("shape: shape = unknown").SetShapeFn(ShapeFromAttr));
  RegisterCoreOp(r, OpDefBuilder("Identity").Input("input: T").Output("output: T").Attr("T: type")
                  .SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("NoOp").SetShapeFn(ScalarShape));
  // Identity of a list: what an inlined function call leaves under the call's name.
  RegisterCoreOp(r, OpDefBuilder("IdentityN").Input("input: T").Output("output: T").Attr("T: list(type) >= 1")
                  .SetShapeFn([](InferenceContext& c) -> Status {
                    for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(i));
                    return Status::OK();
                  }));
  // Identity that fails unless the input's shape is compatible with `shape`.
  RegisterCoreOp(r, OpDefBuilder("EnsureShape").Input("input: T").Output("output: T").Attr("shape: shape")
                  .Attr("T: type").SetShapeFn([](InferenceContext& c) -> Status {
                    TensorShape shape;
                    RETURN_IF_ERROR(c.GetAttr("shape", &shape));
                    ASSIGN_OR_RETURN(TensorShape merged, InferenceContext::Merge(c.input(0), shape));
                    c.set_output(0, merged);
                    return Status::OK();
                  }));
  // Identity to the forward pass; gradients stop here.
  RegisterCoreOp(r, OpDefBuilder("StopGradient").Input("input: T").Output("output: T").Attr("T: type")
                  .SetShapeFn(UnchangedShape));

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
  RegisterCoreOp(r, OpDefBuilder("Pack").Input("values: N * T").Output("output: T").Attr("N: int >= 1")
                  .Attr("T: type").Attr("axis: int = 0").SetShapeFn(PackShape));
  RegisterCoreOp(r, OpDefBuilder("Squeeze").Input("input: T").Output("output: T").Attr("T: type")
                  .Attr("squeeze_dims: list(int) = []").SetShapeFn(SqueezeShape));
  RegisterCoreOp(r, OpDefBuilder("ExpandDims").Input("input: T").Input("dim: Tdim").Output("output: T")
                  .Attr("T: type").Attr("Tdim: {int32, int64} = int32").SetShapeFn(ExpandDimsShape));
  RegisterCoreOp(r, OpDefBuilder("Transpose").Input("x: T").Input("perm: Tperm").Output("y: T").Attr("T: type")
                  .Attr("Tperm: {int32, int64} = int32").SetShapeFn(TransposeShape));
  RegisterCoreOp(r, OpDefBuilder("Tile").Input("input: T").Input("multiples: Tmultiples").Output("output: T")
                  .Attr("T: type").Attr("Tmultiples: {int32, int64} = int32").SetShapeFn(TileShape));
  RegisterCoreOp(r, OpDefBuilder("Slice").Input("input: T").Input("begin: Index").Input("size: Index")
                  .Output("output: T").Attr("T: type").Attr("Index: {int32, int64}").SetShapeFn(SliceShape));
  RegisterCoreOp(r, OpDefBuilder("StridedSlice").Input("input: T").Input("begin: Index").Input("end: Index")
                  .Input("strides: Index").Output("output: T").Attr("T: type").Attr("Index: {int32, int64}")
                  .Attr("begin_mask: int = 0").Attr("end_mask: int = 0").Attr("ellipsis_mask: int = 0")
                  .Attr("new_axis_mask: int = 0").Attr("shrink_axis_mask: int = 0").SetShapeFn(StridedSliceShape));
  RegisterCoreOp(r, OpDefBuilder("Unpack").Input("value: T").Output("output: num * T").Attr("num: int >= 0")
                  .Attr("T: type").Attr("axis: int = 0").SetShapeFn(UnpackShape));
  RegisterCoreOp(r, OpDefBuilder("Pad").Input("input: T").Input("paddings: Tpaddings").Output("output: T")
                  .Attr("T: type").Attr("Tpaddings: {int32, int64} = int32").SetShapeFn(PadShape));
  RegisterCoreOp(r, OpDefBuilder("PadV2").Input("input: T").Input("paddings: Tpaddings").Input("constant_values: T")
                  .Output("output: T").Attr("T: type").Attr("Tpaddings: {int32, int64} = int32").SetShapeFn(PadShape));
  RegisterCoreOp(r, OpDefBuilder("Gather").Input("params: Tparams").Input("indices: Tindices").Output("output: Tparams")
                  .Attr("validate_indices: bool = true").Attr("Tparams: type").Attr("Tindices: {int32, int64}")
                  .SetShapeFn(GatherShape));
  RegisterCoreOp(r, OpDefBuilder("GatherV2").Input("params: Tparams").Input("indices: Tindices").Input("axis: Taxis")
                  .Output("output: Tparams").Attr("batch_dims: int = 0").Attr("Tparams: type")
                  .Attr("Tindices: {int32, int64}").Attr("Taxis: {int32, int64}").SetShapeFn(GatherShape));
  RegisterCoreOp(r, OpDefBuilder("Range").Input("start: Tidx").Input("limit: Tidx").Input("delta: Tidx")
                  .Output("output: Tidx").Attr("Tidx: {float32, float64, int32, int64} = int32")
                  .SetShapeFn([](InferenceContext& c) {
                    c.set_output(0, TensorShape({-1}));
                    return Status::OK();
                  }));
  RegisterCoreOp(r, OpDefBuilder("StridedSliceGrad").Input("shape: Index").Input("begin: Index").Input("end: Index")
                  .Input("strides: Index").Input("dy: T").Output("output: T").Attr("T: type")
                  .Attr("Index: {int32, int64}").Attr("begin_mask: int = 0").Attr("end_mask: int = 0")
                  .Attr("ellipsis_mask: int = 0").Attr("new_axis_mask: int = 0").Attr("shrink_axis_mask: int = 0")
                  .SetShapeFn(ShapeFromInput0));
  RegisterCoreOp(r, OpDefBuilder("Shape").Input("input: T").Output("output: out_type").Attr("T: type")
                  .Attr("out_type: {int32, int64} = int32").SetShapeFn(ShapeShape));
}

}  // namespace tessera
