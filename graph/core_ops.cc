// Schemas of the core ops, with TensorFlow 1.x names, inputs, attrs and shape rules.
#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "graph/op_registry.h"

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

Status ShapeFromAttr(InferenceContext& c) {
  TensorShape s;
  RETURN_IF_ERROR(c.GetAttr("shape", &s));
  c.set_output(0, s);
  return Status::OK();
}

// Every input must have compatible shapes; the output has the most specific of them.
Status MergedInputsShape(InferenceContext& c) {
  TensorShape s = c.input(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(s, InferenceContext::Merge(s, c.input(i)));
  }
  c.set_output(0, s);
  return Status::OK();
}

Status AssignShape(InferenceContext& c) {
  bool validate = true;
  RETURN_IF_ERROR(c.GetAttr("validate_shape", &validate));
  if (!validate) {
    c.set_output(0, c.input(1));
    return Status::OK();
  }
  return MergedInputsShape(c);
}


Status MatMulShape(InferenceContext& c) {
  bool ta = false, tb = false;
  RETURN_IF_ERROR(c.GetAttr("transpose_a", &ta));
  RETURN_IF_ERROR(c.GetAttr("transpose_b", &tb));
  const TensorShape& a = c.input(0);
  const TensorShape& b = c.input(1);
  for (const TensorShape* s : {&a, &b}) {
    if (!s->unknown_rank() && s->rank() != 2) {
      return errors::InvalidArgument("Shape must be rank 2 but is rank ", s->rank());
    }
  }
  int64_t m = a.unknown_rank() ? -1 : a.dim(ta ? 1 : 0);
  int64_t ka = a.unknown_rank() ? -1 : a.dim(ta ? 0 : 1);
  int64_t kb = b.unknown_rank() ? -1 : b.dim(tb ? 1 : 0);
  int64_t n = b.unknown_rank() ? -1 : b.dim(tb ? 0 : 1);
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return errors::InvalidArgument("Dimensions must be equal, but are ", ka, " and ", kb);
  }
  c.set_output(0, TensorShape({m, n}));
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

Status BiasAddGradShape(InferenceContext& c) {
  std::string format;
  RETURN_IF_ERROR(c.GetAttr("data_format", &format));
  const TensorShape& in = c.input(0);
  if (in.unknown_rank()) {
    c.set_output(0, TensorShape({-1}));
  } else if (in.rank() < 2) {
    return errors::InvalidArgument("Input tensor must be at least 2D: ", in.DebugString());
  } else {
    c.set_output(0, TensorShape({in.dim(format == "NCHW" ? 1 : in.rank() - 1)}));
  }
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

Status SparseXentShape(InferenceContext& c) {
  const TensorShape& logits = c.input(0);
  if (!logits.unknown_rank() && logits.rank() != 2) {
    return errors::InvalidArgument("logits must be 2-D, but got shape ", logits.DebugString());
  }
  const int64_t batch = logits.unknown_rank() ? -1 : logits.dim(0);
  c.set_output(0, TensorShape({batch}));
  c.set_output(1, logits.unknown_rank() ? TensorShape({-1, -1}) : logits);
  return Status::OK();
}

// The input's shape without the reduced dimension.
Status ArgMaxShape(InferenceContext& c) {
  const TensorShape& in = c.input(0);
  const Tensor* dim = c.input_tensor(1);
  if (in.unknown_rank() || dim == nullptr || dim->NumElements() != 1) return Status::OK();
  int64_t d = IntTensorValues(*dim)[0];
  if (d < -in.rank() || d >= in.rank()) {
    return errors::InvalidArgument("Expected dimension in the range [", -in.rank(), ", ", in.rank(), "), but got ", d);
  }
  if (d < 0) d += in.rank();
  TensorShape out;
  for (int i = 0; i < in.rank(); ++i) {
    if (i != d) out.AddDim(in.dim(i));
  }
  c.set_output(0, out);
  return Status::OK();
}

// A shape given as the value of input 0.
Status ShapeFromInput0(InferenceContext& c) {
  const Tensor* shape = c.input_tensor(0);
  if (shape != nullptr) {
    ASSIGN_OR_RETURN(TensorShape s, TensorShape::Make(IntTensorValues(*shape)));
    c.set_output(0, s);
  }
  return Status::OK();
}

Status ShapeFromInput1(InferenceContext& c) {
  const Tensor* shape = c.input_tensor(1);
  if (shape != nullptr) {
    ASSIGN_OR_RETURN(TensorShape s, TensorShape::Make(IntTensorValues(*shape)));
    c.set_output(0, s);
  }
  return Status::OK();
}

// NHWC input, a window of kh x kw (-1: unknown), and `depth` output channels.
Status WindowedShape(InferenceContext& c, int64_t kh, int64_t kw, int64_t depth) {
  std::vector<int64_t> strides;
  std::string padding;
  RETURN_IF_ERROR(c.GetAttr("strides", &strides));
  RETURN_IF_ERROR(c.GetAttr("padding", &padding));
  if (strides.size() != 4) return errors::InvalidArgument("strides must have 4 elements, got ", strides.size());
  const TensorShape& in = c.input(0);
  if (in.unknown_rank()) return Status::OK();
  if (in.rank() != 4) return errors::InvalidArgument("input must be 4-D (NHWC), got ", in.DebugString());
  int64_t oh = -1, ow = -1, pad;
  if (in.dim(1) >= 0 && kh >= 0) RETURN_IF_ERROR(WindowedOutputSize(in.dim(1), kh, strides[1], padding, &oh, &pad));
  if (in.dim(2) >= 0 && kw >= 0) RETURN_IF_ERROR(WindowedOutputSize(in.dim(2), kw, strides[2], padding, &ow, &pad));
  c.set_output(0, TensorShape({in.dim(0), oh, ow, depth}));
  return Status::OK();
}

Status Conv2DShape(InferenceContext& c) {
  const TensorShape& f = c.input(1);
  if (!f.unknown_rank() && f.rank() != 4) return errors::InvalidArgument("filter must be 4-D, got ", f.DebugString());
  if (f.unknown_rank()) return WindowedShape(c, -1, -1, -1);
  const TensorShape& in = c.input(0);
  if (!in.unknown_rank() && in.rank() == 4 && in.dim(3) >= 0 && f.dim(2) >= 0 && in.dim(3) != f.dim(2)) {
    return errors::InvalidArgument("input depth must match filter depth: ", in.dim(3), " vs ", f.dim(2));
  }
  return WindowedShape(c, f.dim(0), f.dim(1), f.dim(3));
}

Status PoolShape(InferenceContext& c) {
  std::vector<int64_t> ksize;
  RETURN_IF_ERROR(c.GetAttr("ksize", &ksize));
  if (ksize.size() != 4) return errors::InvalidArgument("ksize must have 4 elements, got ", ksize.size());
  const TensorShape& in = c.input(0);
  return WindowedShape(c, ksize[1], ksize[2], in.unknown_rank() || in.rank() != 4 ? -1 : in.dim(3));
}

Status ReductionShape(InferenceContext& c) {
  bool keep_dims = false;
  RETURN_IF_ERROR(c.GetAttr("keep_dims", &keep_dims));
  const TensorShape& in = c.input(0);
  const Tensor* axes = c.input_tensor(1);
  if (in.unknown_rank() || axes == nullptr) return Status::OK();
  std::vector<bool> reduce(in.rank(), false);
  for (int64_t a : IntTensorValues(*axes)) {
    if (a < -in.rank() || a >= in.rank()) {
      return errors::InvalidArgument("Invalid reduction dimension ", a, " for input with ",
                                     in.rank(), " dimensions");
    }
    reduce[a < 0 ? a + in.rank() : a] = true;
  }
  TensorShape out;
  for (int i = 0; i < in.rank(); ++i) {
    if (!reduce[i]) {
      out.AddDim(in.dim(i));
    } else if (keep_dims) {
      out.AddDim(1);
    }
  }
  c.set_output(0, out);
  return Status::OK();
}

Status SoftmaxShape(InferenceContext& c) {
  if (!c.input(0).unknown_rank() && c.input(0).rank() < 1) {
    return errors::InvalidArgument("Shape must be at least rank 1 but is rank 0");
  }
  return UnchangedShape(c);
}

Status BiasAddShape(InferenceContext& c) {
  std::string format;
  RETURN_IF_ERROR(c.GetAttr("data_format", &format));
  if (format != "NHWC" && format != "NCHW") {
    return errors::InvalidArgument("Unknown data_format '", format, "': use NHWC or NCHW");
  }
  const TensorShape& v = c.input(0);
  const TensorShape& b = c.input(1);
  if (!b.unknown_rank() && b.rank() != 1) {
    return errors::InvalidArgument("Shape must be rank 1 but is rank ", b.rank());
  }
  if (!v.unknown_rank() && v.rank() < 2) {
    return errors::InvalidArgument("Shape must be at least rank 2 but is rank ", v.rank());
  }
  if (!v.unknown_rank() && !b.unknown_rank()) {
    int64_t channels = v.dim(format == "NHWC" ? v.rank() - 1 : 1);
    if (channels >= 0 && b.dim(0) >= 0 && channels != b.dim(0)) {
      return errors::InvalidArgument("Dimensions must be equal, but are ", channels, " and ",
                                     b.dim(0));
    }
  }
  c.set_output(0, v);
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

// Every column has the shape of the records.
Status DecodeCsvShape(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(0));
  return Status::OK();
}

Status QueueHandleShape(InferenceContext& c) {
  c.set_output(0, TensorShape({2}));
  return Status::OK();
}

// Output i has the shape of input i.
Status PairwiseUnchangedShapes(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(i));
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

constexpr const char* kNumeric = "T: {float32, float64, int32, int64}";
constexpr const char* kFloating = "T: {float32, float64}";

}  // namespace

void RegisterCoreOp(OpRegistry& r, const OpDefBuilder& b) {
  Status s = r.Register(b);
  if (!s.ok()) {
    std::cerr << "tessera: bad core op schema: " << s << "\n";
    std::abort();
  }
}

void RegisterCoreOps(OpRegistry& r) {
  RegisterCoreOp(r, OpDefBuilder("Const").Output("output: dtype").Attr("value: tensor").Attr("dtype: type")
                  .SetShapeFn(ConstShape));
  RegisterCoreOp(r, OpDefBuilder("Placeholder").Output("output: dtype").Attr("dtype: type")
                  .Attr("shape: shape = unknown").SetShapeFn(ShapeFromAttr));
  RegisterCoreOp(r, OpDefBuilder("Identity").Input("input: T").Output("output: T").Attr("T: type")
                  .SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("NoOp").SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("VariableV2").Output("ref: Ref(dtype)").Attr("shape: shape")
                  .Attr("dtype: type").Attr("container: string = \"\"")
                  .Attr("shared_name: string = \"\"").SetIsStateful().SetShapeFn(ShapeFromAttr));
  RegisterCoreOp(r, OpDefBuilder("Assign").Input("ref: Ref(T)").Input("value: T")
                  .Output("output_ref: Ref(T)").Attr("T: type").Attr("validate_shape: bool = true")
                  .Attr("use_locking: bool = true").SetShapeFn(AssignShape));
  for (const char* op : {"AssignAdd", "AssignSub"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("ref: Ref(T)").Input("value: T")
                    .Output("output_ref: Ref(T)").Attr(kNumeric).Attr("use_locking: bool = false")
                    .SetShapeFn(MergedInputsShape));
  }
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Maximum", "Minimum"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: T").Input("y: T").Output("z: T").Attr(kNumeric)
                    .SetShapeFn(BroadcastBinaryShape));
  }
  RegisterCoreOp(r, OpDefBuilder("Equal").Input("x: T").Input("y: T").Output("z: bool")
                  .Attr("T: {float32, float64, int32, int64, bool, string}")
                  .SetShapeFn(BroadcastBinaryShape));
  for (const char* op : {"Greater", "Less"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: T").Input("y: T").Output("z: bool").Attr(kNumeric)
                    .SetShapeFn(BroadcastBinaryShape));
  }
  RegisterCoreOp(r, OpDefBuilder("AddN").Input("inputs: N * T").Output("sum: T").Attr("N: int >= 1")
                  .Attr(kNumeric).SetShapeFn(MergedInputsShape));
  for (const char* op : {"Neg", "Square"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: T").Output("y: T").Attr(kNumeric)
                    .SetShapeFn(UnchangedShape));
  }
  for (const char* op : {"Sqrt", "Exp", "Log"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: T").Output("y: T").Attr(kFloating)
                    .SetShapeFn(UnchangedShape));
  }
  RegisterCoreOp(r, OpDefBuilder("MatMul").Input("a: T").Input("b: T").Output("product: T").Attr(kNumeric)
                  .Attr("transpose_a: bool = false").Attr("transpose_b: bool = false")
                  .SetShapeFn(MatMulShape));
  RegisterCoreOp(r, OpDefBuilder("Reshape").Input("tensor: T").Input("shape: Tshape").Output("output: T")
                  .Attr("T: type").Attr("Tshape: {int32, int64} = int32").SetShapeFn(ReshapeShape));
  RegisterCoreOp(r, OpDefBuilder("Cast").Input("x: SrcT").Output("y: DstT").Attr("SrcT: type")
                  .Attr("DstT: type").Attr("Truncate: bool = false").SetShapeFn(UnchangedShape));
  for (const char* op : {"Sum", "Mean", "Max"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("input: T").Input("reduction_indices: Tidx")
                    .Output("output: T").Attr("keep_dims: bool = false").Attr(kNumeric)
                    .Attr("Tidx: {int32, int64} = int32").SetShapeFn(ReductionShape));
  }
  RegisterCoreOp(r, OpDefBuilder("Relu").Input("features: T").Output("activations: T").Attr(kNumeric)
                  .SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("Softmax").Input("logits: T").Output("softmax: T").Attr(kFloating)
                  .SetShapeFn(SoftmaxShape));
  RegisterCoreOp(r, OpDefBuilder("LogSoftmax").Input("logits: T").Output("logsoftmax: T").Attr(kFloating)
                  .SetShapeFn(SoftmaxShape));
  RegisterCoreOp(r, OpDefBuilder("SparseSoftmaxCrossEntropyWithLogits").Input("features: T").Input("labels: Tlabels")
                  .Output("loss: T").Output("backprop: T").Attr(kFloating).Attr("Tlabels: {int32, int64} = int64")
                  .SetShapeFn(SparseXentShape));
  RegisterCoreOp(r, OpDefBuilder("ArgMax").Input("input: T").Input("dimension: Tidx").Output("output: output_type")
                  .Attr(kNumeric).Attr("Tidx: {int32, int64} = int32").Attr("output_type: {int32, int64} = int64")
                  .SetShapeFn(ArgMaxShape));
  // Random tensors of a given shape; both seeds 0 means a fresh random sequence, otherwise
  // the sequence is the same in every session.
  for (const char* op : {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("shape: T").Output("output: dtype").Attr("seed: int = 0")
                    .Attr("seed2: int = 0").Attr("dtype: {float32, float64}").Attr("T: {int32, int64}")
                    .SetIsStateful().SetShapeFn(ShapeFromInput0));
  }
  RegisterCoreOp(r, OpDefBuilder("BiasAdd").Input("value: T").Input("bias: T").Output("output: T")
                  .Attr(kNumeric).Attr("data_format: string = \"NHWC\"").SetShapeFn(BiasAddShape));

  // Convolution and pooling, NHWC, with TensorFlow's SAME/VALID windows.
  RegisterCoreOp(r, OpDefBuilder("Conv2D").Input("input: T").Input("filter: T").Output("output: T").Attr(kFloating)
                  .Attr("strides: list(int)").Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").SetShapeFn(Conv2DShape));
  RegisterCoreOp(r, OpDefBuilder("Conv2DBackpropInput").Input("input_sizes: int32").Input("filter: T")
                  .Input("out_backprop: T").Output("output: T").Attr(kFloating).Attr("strides: list(int)")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").SetShapeFn(ShapeFromInput0));
  RegisterCoreOp(r, OpDefBuilder("Conv2DBackpropFilter").Input("input: T").Input("filter_sizes: int32")
                  .Input("out_backprop: T").Output("output: T").Attr(kFloating).Attr("strides: list(int)")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").SetShapeFn(ShapeFromInput1));
  for (const char* op : {"MaxPool", "AvgPool"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input(std::string_view(op) == "MaxPool" ? "input: T" : "value: T")
                    .Output("output: T").Attr(kFloating).Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4")
                    .Attr("padding: string").Attr("data_format: string = \"NHWC\"").SetShapeFn(PoolShape));
  }
  RegisterCoreOp(r, OpDefBuilder("MaxPoolGrad").Input("orig_input: T").Input("orig_output: T").Input("grad: T")
                  .Output("output: T").Attr(kFloating).Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"").SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("AvgPoolGrad").Input("orig_input_shape: int32").Input("grad: T").Output("output: T")
                  .Attr(kFloating).Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"").SetShapeFn(ShapeFromInput0));

  // Optimizer updates, in place through references to the variable and its accumulators,
  // with TensorFlow's formulas (training/optimizers.h builds them).
  const char* kFloat = "T: {float32, float64}";
  RegisterCoreOp(r, OpDefBuilder("ApplyGradientDescent").Input("var: Ref(T)").Input("alpha: T").Input("delta: T")
                  .Output("out: Ref(T)").Attr(kFloat).Attr("use_locking: bool = false").SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("ApplyMomentum").Input("var: Ref(T)").Input("accum: Ref(T)").Input("lr: T")
                  .Input("grad: T").Input("momentum: T").Output("out: Ref(T)").Attr(kFloat)
                  .Attr("use_locking: bool = false").Attr("use_nesterov: bool = false").SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("ApplyRMSProp").Input("var: Ref(T)").Input("ms: Ref(T)").Input("mom: Ref(T)")
                  .Input("lr: T").Input("rho: T").Input("momentum: T").Input("epsilon: T").Input("grad: T")
                  .Output("out: Ref(T)").Attr(kFloat).Attr("use_locking: bool = false").SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("ApplyAdam").Input("var: Ref(T)").Input("m: Ref(T)").Input("v: Ref(T)")
                  .Input("beta1_power: T").Input("beta2_power: T").Input("lr: T").Input("beta1: T").Input("beta2: T")
                  .Input("epsilon: T").Input("grad: T").Output("out: Ref(T)").Attr(kFloat)
                  .Attr("use_locking: bool = false").Attr("use_nesterov: bool = false").SetShapeFn(UnchangedShape));

  // The ops gradient functions (graph/math_grad.cc, graph/nn_grad.cc) build on.
  RegisterCoreOp(r, OpDefBuilder("ReluGrad").Input("gradients: T").Input("features: T").Output("backprops: T")
                  .Attr(kNumeric).SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("BiasAddGrad").Input("out_backprop: T").Output("output: T").Attr(kNumeric)
                  .Attr("data_format: string = \"NHWC\"").SetShapeFn(BiasAddGradShape));
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

  // Checkpoints (kernels/checkpoint_file.h): SaveTensors writes its inputs under the given
  // names; RestoreTensors reads the named tensors back, checked against `shapes` when given
  // so that a mismatch fails before any variable is assigned.
  RegisterCoreOp(r, OpDefBuilder("SaveTensors").Input("filename: string").Input("tensor_names: string")
                  .Input("data: T").Attr("T: list(type) >= 1").SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("RestoreTensors").Input("filename: string").Input("tensor_names: string")
                  .Output("tensors: dtypes").Attr("dtypes: list(type) >= 1").Attr("shapes: list(shape) = []")
                  .SetIsStateful());

  // Runtime-internal: a session's feeds and fetches become _Arg and _Retval nodes.
  RegisterCoreOp(r, OpDefBuilder("_Arg").Output("output: T").Attr("T: type").Attr("index: int >= 0")
                  .Attr("shape: shape = unknown").SetShapeFn(ShapeFromAttr));
  RegisterCoreOp(r, OpDefBuilder("_Retval").Input("input: T").Attr("T: type").Attr("index: int >= 0"));

  // Queues (TensorFlow 1.x's data_flow_ops). A queue op creates or finds the queue named
  // by shared_name (its own name when empty) in its container and outputs a handle: the
  // string vector [container, name].
  constexpr const char* kQueueAttrs[] = {"component_types: list(type) >= 1", "shapes: list(shape) = []",
                                         "capacity: int = -1", "container: string = \"\"",
                                         "shared_name: string = \"\""};
  for (const char* op : {"FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue"}) {
    OpDefBuilder b(op);
    b.Output("handle: string").SetIsStateful().SetShapeFn(QueueHandleShape);
    for (const char* a : kQueueAttrs) b.Attr(a);
    if (std::string_view(op) == "RandomShuffleQueue") {
      b.Attr("min_after_dequeue: int = 0").Attr("seed: int = 0").Attr("seed2: int = 0");
    }
    RegisterCoreOp(r, b);
  }
  for (const char* op : {"QueueEnqueue", "QueueEnqueueMany"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("handle: string").Input("components: Tcomponents")
                    .Attr("Tcomponents: list(type) >= 1").SetIsStateful());
  }
  RegisterCoreOp(r, OpDefBuilder("QueueDequeue").Input("handle: string").Output("components: component_types")
                  .Attr("component_types: list(type) >= 1").SetIsStateful());
  for (const char* op : {"QueueDequeueMany", "QueueDequeueUpTo"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("handle: string").Input("n: int32").Output("components: component_types")
                    .Attr("component_types: list(type) >= 1").SetIsStateful());
  }
  RegisterCoreOp(r, OpDefBuilder("QueueClose").Input("handle: string").Attr("cancel_pending_enqueues: bool = false")
                  .SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("QueueSize").Input("handle: string").Output("size: int32").SetIsStateful()
                  .SetShapeFn(ScalarShape));

  // tf.io.decode_csv: each record string becomes one value per column, of the column's
  // record_default dtype; an empty default makes the column required.
  RegisterCoreOp(r, OpDefBuilder("DecodeCSV").Input("records: string").Input("record_defaults: OUT_TYPE")
                  .Output("output: OUT_TYPE").Attr("OUT_TYPE: list(type) >= 1")
                  .Attr("field_delim: string = \",\"").Attr("use_quote_delim: bool = true")
                  .Attr("na_value: string = \"\"").SetShapeFn(DecodeCsvShape));

  // Runtime-internal: partitioning turns every cross-device edge into a _Send on the
  // producer's device and a _Recv on the consumer's, meeting in the step's rendezvous.
  RegisterCoreOp(r, OpDefBuilder("_Send").Input("tensor: T").Attr("T: type").Attr("tensor_name: string")
                  .Attr("send_device: string").Attr("send_device_incarnation: int")
                  .Attr("recv_device: string").Attr("client_terminated: bool = false")
                  .SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("_Recv").Output("tensor: tensor_type").Attr("tensor_type: type")
                  .Attr("tensor_name: string").Attr("send_device: string")
                  .Attr("send_device_incarnation: int").Attr("recv_device: string")
                  .Attr("client_terminated: bool = false").Attr("shape: shape = unknown")
                  .SetIsStateful().SetShapeFn(ShapeFromAttr));

  // One member per device of a group: the members of (group_key, instance_key) reduce
  // their inputs elementwise and each gets the result. Several inputs are fused into one
  // ring pass. The session assigns each member its place in the ring.
  RegisterCoreOp(r, OpDefBuilder("AllReduce").Input("input: N * T").Output("output: N * T")
                  .Attr("T: {float32, float64, int32}").Attr("N: int >= 1")
                  .Attr("reduction: string = \"sum\"").Attr("group_key: int")
                  .Attr("group_size: int >= 1").Attr("instance_key: int")
                  .Attr("wire_float16: bool = false").SetIsStateful()
                  .SetShapeFn(PairwiseUnchangedShapes));
  RegisterDataOps(r);
}

}  // namespace tessera
