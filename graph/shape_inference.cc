#include "graph/shape_inference.h"

#include <algorithm>

namespace tessera {

InferenceContext::InferenceContext(std::string_view node_name, const AttrMap& attrs,
                                   std::vector<TensorShape> input_shapes,
                                   std::vector<const Tensor*> input_values, int num_outputs)
    : node_name_(node_name),
      attrs_(attrs),
      inputs_(std::move(input_shapes)),
      values_(std::move(input_values)),
      outputs_(num_outputs, TensorShape::UnknownRank()) {}

StatusOr<TensorShape> InferenceContext::BroadcastShapes(const TensorShape& a,
                                                        const TensorShape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return TensorShape::UnknownRank();
  int rank = std::max(a.rank(), b.rank());
  TensorShape out;
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i;
    int ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a.dim(ia) : 1;
    int64_t db = ib >= 0 ? b.dim(ib) : 1;
    int64_t d;
    if (da == 1) {
      d = db;
    } else if (db == 1) {
      d = da;
    } else if (da < 0 || db < 0) {
      d = std::max(da, db);  // an unknown dim broadcast with a known dim > 1 must equal it
    } else if (da == db) {
      d = da;
    } else {
      return errors::InvalidArgument("Incompatible shapes: ", a.DebugString(), " vs. ",
                                     b.DebugString());
    }
    out.AddDim(d);
  }
  return out;
}

bool InferenceContext::SameButLeadingOnes(const TensorShape& a, const TensorShape& b) {
  const TensorShape& longer = a.rank() >= b.rank() ? a : b;
  const TensorShape& shorter = a.rank() >= b.rank() ? b : a;
  const int extra = longer.rank() - shorter.rank();
  for (int i = 0; i < longer.rank(); ++i) {
    if (longer.dim(i) != (i < extra ? 1 : shorter.dim(i - extra))) return false;
  }
  return true;
}

StatusOr<TensorShape> InferenceContext::Merge(const TensorShape& a, const TensorShape& b) {
  if (a.unknown_rank()) return b;
  if (b.unknown_rank()) return a;
  if (!a.IsCompatibleWith(b)) {
    return errors::InvalidArgument("Shapes ", a.DebugString(), " and ", b.DebugString(),
                                   " are not compatible");
  }
  TensorShape out = a;
  for (int i = 0; i < a.rank(); ++i) {
    if (out.dim(i) < 0) out.set_dim(i, b.dim(i));
  }
  return out;
}

Status UnchangedShape(InferenceContext& c) {
  c.set_output(0, c.input(0));
  return Status::OK();
}

Status BroadcastBinaryShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(TensorShape s, InferenceContext::BroadcastShapes(c.input(0), c.input(1)));
  c.set_output(0, s);
  return Status::OK();
}

Status UnknownShape(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, TensorShape::UnknownRank());
  return Status::OK();
}

Status ScalarShape(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, TensorShape());
  return Status::OK();
}

Status ShapeFromAttr(InferenceContext& c) {
  TensorShape s;
  RETURN_IF_ERROR(c.GetAttr("shape", &s));
  c.set_output(0, s);
  return Status::OK();
}

Status MergedInputsShape(InferenceContext& c) {
  TensorShape s = c.input(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(s, InferenceContext::Merge(s, c.input(i)));
  }
  c.set_output(0, s);
  return Status::OK();
}

namespace {

Status ShapeFromValueOf(InferenceContext& c, int input) {
  const Tensor* shape = c.input_tensor(input);
  if (shape != nullptr) {
    ASSIGN_OR_RETURN(TensorShape s, TensorShape::Make(IntTensorValues(*shape)));
    c.set_output(0, s);
  }
  return Status::OK();
}

}  // namespace

Status ShapeFromInput0(InferenceContext& c) { return ShapeFromValueOf(c, 0); }
Status ShapeFromInput1(InferenceContext& c) { return ShapeFromValueOf(c, 1); }

Status WindowedOutputSize(int64_t in, int64_t k, int64_t stride, std::string_view padding, int64_t* out,
                          int64_t* pad_before) {
  if (k < 1 || stride < 1) return errors::InvalidArgument("Window size and stride must be positive");
  if (padding == "SAME") {
    *out = (in + stride - 1) / stride;
    *pad_before = std::max<int64_t>((*out - 1) * stride + k - in, 0) / 2;
  } else if (padding == "VALID") {
    if (in < k) return errors::InvalidArgument("A window of ", k, " does not fit an input of ", in, " with VALID padding");
    *out = (in - k) / stride + 1;
    *pad_before = 0;
  } else {
    return errors::InvalidArgument("Unknown padding '", padding, "'; expected SAME or VALID");
  }
  return Status::OK();
}

}  // namespace tessera
