// Schemas of elementwise arithmetic, comparison and logic, Select, AddN, MatMul, Cast, reductions,
// ArgMax and UnsortedSegmentSum.
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {
namespace {

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

// Select: t and e of one shape; the condition of that shape, a scalar, or a vector along t's
// first dimension.
Status SelectShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(TensorShape te, InferenceContext::Merge(c.input(1), c.input(2)));
  const TensorShape& cond = c.input(0);
  if (!cond.unknown_rank() && !te.unknown_rank() && cond.rank() != 0) {
    if (cond.rank() == 1 && te.rank() > 1) {
      RETURN_IF_ERROR(InferenceContext::Merge(cond, TensorShape({te.dim(0)})).status());
    } else {
      RETURN_IF_ERROR(InferenceContext::Merge(cond, te).status());
    }
  }
  c.set_output(0, te);
  return Status::OK();
}

Status SelectV2Shape(InferenceContext& c) {
  ASSIGN_OR_RETURN(TensorShape te, InferenceContext::BroadcastShapes(c.input(1), c.input(2)));
  ASSIGN_OR_RETURN(TensorShape out, InferenceContext::BroadcastShapes(c.input(0), te));
  c.set_output(0, out);
  return Status::OK();
}

// [num_segments] + data.shape[rank(segment_ids):]
Status UnsortedSegmentShape(InferenceContext& c) {
  const TensorShape& data = c.input(0);
  const TensorShape& ids = c.input(1);
  const Tensor* n = c.input_tensor(2);
  if (data.unknown_rank() || ids.unknown_rank()) return Status::OK();
  if (ids.rank() > data.rank()) {
    return errors::InvalidArgument("segment_ids of rank ", ids.rank(), " for data of rank ", data.rank());
  }
  std::vector<int64_t> dims{-1};
  if (n != nullptr) {
    if (n->NumElements() != 1) return errors::InvalidArgument("num_segments should be a scalar");
    dims[0] = IntTensorValues(*n)[0];
    if (dims[0] < 0) return errors::InvalidArgument("num_segments must be non-negative, got ", dims[0]);
  }
  dims.insert(dims.end(), data.dims().begin() + ids.rank(), data.dims().end());
  c.set_output(0, TensorShape(dims));
  return Status::OK();
}

}  // namespace

void RegisterMathOps(OpRegistry& r) {
  // AddV2 is what TensorFlow 2 emits for `+`; it differs from Add only for strings.
  for (const char* op : {"Add", "AddV2", "Sub", "Mul", "Div", "Maximum", "Minimum", "SquaredDifference"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: T").Input("y: T").Output("z: T").Attr(kNumeric)
                    .SetShapeFn(BroadcastBinaryShape));
  }
  RegisterCoreOp(r, OpDefBuilder("Equal").Input("x: T").Input("y: T").Output("z: bool")
                  .Attr("T: {float32, float64, int32, int64, bool, string}")
                  .SetShapeFn(BroadcastBinaryShape));
  RegisterCoreOp(r, OpDefBuilder("NotEqual").Input("x: T").Input("y: T").Output("z: bool")
                  .Attr("T: {float32, float64, int32, int64, bool, string}")
                  .SetShapeFn(BroadcastBinaryShape));
  for (const char* op : {"Greater", "Less", "GreaterEqual", "LessEqual"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: T").Input("y: T").Output("z: bool").Attr(kNumeric)
                    .SetShapeFn(BroadcastBinaryShape));
  }
  for (const char* op : {"LogicalAnd", "LogicalOr"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: bool").Input("y: bool").Output("z: bool")
                    .SetShapeFn(BroadcastBinaryShape));
  }
  RegisterCoreOp(r, OpDefBuilder("LogicalNot").Input("x: bool").Output("y: bool").SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("Select").Input("condition: bool").Input("t: T").Input("e: T").Output("output: T")
                  .Attr("T: type").SetShapeFn(SelectShape));
  RegisterCoreOp(r, OpDefBuilder("SelectV2").Input("condition: bool").Input("t: T").Input("e: T")
                  .Output("output: T").Attr("T: type").SetShapeFn(SelectV2Shape));
  // Gather's gradient: rows of data summed into the segments segment_ids name.
  RegisterCoreOp(r, OpDefBuilder("UnsortedSegmentSum").Input("data: T").Input("segment_ids: Tindices")
                  .Input("num_segments: Tnumsegments").Output("output: T").Attr(kNumeric)
                  .Attr("Tindices: {int32, int64}").Attr("Tnumsegments: {int32, int64} = int32")
                  .SetShapeFn(UnsortedSegmentShape));
  RegisterCoreOp(r, OpDefBuilder("AddN").Input("inputs: N * T").Output("sum: T").Attr("N: int >= 1")
                  .Attr(kNumeric).SetShapeFn(MergedInputsShape));
  for (const char* op : {"Neg", "Square"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: T").Output("y: T").Attr(kNumeric)
                    .SetShapeFn(UnchangedShape));
  }
  // Python's // and % (floor division and modulo), and C's truncating integer division.
  for (const char* op : {"FloorDiv", "FloorMod"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: T").Input("y: T").Output("z: T").Attr(kNumeric)
                    .SetShapeFn(BroadcastBinaryShape));
  }
  RegisterCoreOp(r, OpDefBuilder("TruncateDiv").Input("x: T").Input("y: T").Output("z: T")
                  .Attr("T: {int32, int64}").SetShapeFn(BroadcastBinaryShape));
  // The gradients of Sigmoid and Tanh from their outputs y: dy * y * (1 - y), dy * (1 - y^2).
  for (const char* op : {"SigmoidGrad", "TanhGrad"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("y: T").Input("dy: T").Output("z: T").Attr(kFloating)
                    .SetShapeFn(BroadcastBinaryShape));
  }
  RegisterCoreOp(r, OpDefBuilder("Pow").Input("x: T").Input("y: T").Output("z: T").Attr(kFloating)
                  .SetShapeFn(BroadcastBinaryShape));
  // `/` on floating tensors.
  RegisterCoreOp(r, OpDefBuilder("RealDiv").Input("x: T").Input("y: T").Output("z: T").Attr(kFloating)
                  .SetShapeFn(BroadcastBinaryShape));
  for (const char* op : {"Sqrt", "Rsqrt", "Exp", "Log", "Sigmoid", "Tanh", "Sin", "Cos", "Erf", "Erfc"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: T").Output("y: T").Attr(kFloating)
                    .SetShapeFn(UnchangedShape));
  }
  RegisterCoreOp(r, OpDefBuilder("MatMul").Input("a: T").Input("b: T").Output("product: T").Attr(kNumeric)
                  .Attr("transpose_a: bool = false").Attr("transpose_b: bool = false")
                  .SetShapeFn(MatMulShape));
  // Matrix products over the leading (batch) dimensions, which broadcast in V2.
  for (const char* op : {"BatchMatMul", "BatchMatMulV2"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("x: T").Input("y: T").Output("output: T").Attr(kFloating)
                    .Attr("adj_x: bool = false").Attr("adj_y: bool = false").SetShapeFn(UnknownShape));
  }
  // Two operands' product as an equation names it ("abc,cde->abde"), as Keras's attention
  // writes it: no ellipsis, no label twice in one operand.
  RegisterCoreOp(r, OpDefBuilder("Einsum").Input("inputs: N * T").Output("output: T").Attr("equation: string")
                  .Attr("N: int >= 1").Attr(kFloating).SetShapeFn(UnknownShape));
  // Runtime-internal, TensorFlow's name: MatMul then BiasAdd (then Relu) as one node
  // (runtime/remapper.h); args are the bias; fused_ops "BiasAdd" or "BiasAdd,Relu".
  RegisterCoreOp(r, OpDefBuilder("_FusedMatMul").Input("a: T").Input("b: T").Input("args: num_args * T")
                  .Output("product: T").Attr("T: {float32}").Attr("num_args: int >= 0")
                  .Attr("transpose_a: bool = false").Attr("transpose_b: bool = false").Attr("fused_ops: string")
                  .Attr("epsilon: float = 0.0001").SetShapeFn(MatMulShape));

  RegisterCoreOp(r, OpDefBuilder("Cast").Input("x: SrcT").Output("y: DstT").Attr("SrcT: type")
                  .Attr("DstT: type").Attr("Truncate: bool = false").SetShapeFn(UnchangedShape));
  for (const char* op : {"Sum", "Mean", "Max", "Min", "Prod"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("input: T").Input("reduction_indices: Tidx")
                    .Output("output: T").Attr("keep_dims: bool = false").Attr(kNumeric)
                    .Attr("Tidx: {int32, int64} = int32").SetShapeFn(ReductionShape));
  }

  RegisterCoreOp(r, OpDefBuilder("ArgMax").Input("input: T").Input("dimension: Tidx").Output("output: output_type")
                  .Attr(kNumeric).Attr("Tidx: {int32, int64} = int32").Attr("output_type: {int32, int64} = int64")
                  .SetShapeFn(ArgMaxShape));
}

}  // namespace tessera
