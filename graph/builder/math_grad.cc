// Gradients of the element-wise, matrix and reduction ops: registered into
// GradientRegistry::Global() by name, following TensorFlow's math_grad.
#include "graph/builder/gradients.h"
#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"
#include "graph/op_kinds.h"

namespace tessera {
namespace {

Output In(const Operation& op, int i) { return OpInput(op, i); }
Output Out(const Operation& op, int i = 0) { return Output(op.node(), i); }

// A copy, not a reference into the node: callers pass temporaries such as In(op, i).
TensorShape StaticShape(const Output& o) { return o.node->output_shape(o.index); }

// The gradient `g` of a broadcasting op's result, summed back to the shape of operand `x`
// (`y` being the other operand).
Output Unbroadcast(const Scope& s, const Output& g, const Output& x, const Output& y) {
  const TensorShape sx = StaticShape(x);
  const TensorShape sy = StaticShape(y);
  if (sx.IsFullyDefined() && sx == sy) return g;
  auto shape_x = ops::Shape(s, x);
  auto axes = ops::BroadcastGradientArgs(s, shape_x, ops::Shape(s, y));
  if (axes.empty()) return Output();
  return ops::Reshape(s, ops::Sum(s, g, axes[0]), shape_x);
}

Status BinaryGrads(const Scope& s, const Operation& op, const Output& gx, const Output& gy,
                   std::vector<Output>* grads) {
  *grads = {Unbroadcast(s, gx, In(op, 0), In(op, 1)), Unbroadcast(s, gy, In(op, 1), In(op, 0))};
  return s.status();
}

// Maximum and Minimum pass the gradient to the operand that won; x wins ties, as in
// TensorFlow.
Status MaximumGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output x = In(op, 0), y = In(op, 1);
  Output y_wins = ops::Cast(s, ops::Less(s, x, y), g[0].type());
  Output x_wins = ops::Sub(s, ops::OnesLike(s, y_wins), y_wins);
  return BinaryGrads(s, op, ops::Mul(s, g[0], x_wins), ops::Mul(s, g[0], y_wins), grads);
}

Status MinimumGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output x = In(op, 0), y = In(op, 1);
  Output y_wins = ops::Cast(s, ops::Greater(s, x, y), g[0].type());
  Output x_wins = ops::Sub(s, ops::OnesLike(s, y_wins), y_wins);
  return BinaryGrads(s, op, ops::Mul(s, g[0], x_wins), ops::Mul(s, g[0], y_wins), grads);
}

Status BroadcastToGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  *grads = {Unbroadcast(s, g[0], In(op, 0), Out(op)), Output()};
  return s.status();
}

Status AddGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  return BinaryGrads(s, op, g[0], g[0], grads);
}

Status SubGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  return BinaryGrads(s, op, g[0], ops::Neg(s, g[0]), grads);
}

Status MulGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  return BinaryGrads(s, op, ops::Mul(s, g[0], In(op, 1)), ops::Mul(s, In(op, 0), g[0]), grads);
}

// d(x/y)/dx = 1/y, d(x/y)/dy = -x/y^2.
Status DivGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  Output x = In(op, 0), y = In(op, 1);
  return BinaryGrads(s, op, ops::Div(s, g[0], y), ops::Neg(s, ops::Mul(s, g[0], ops::Div(s, ops::Div(s, x, y), y))),
                     grads);
}

Status AddNGrad(const Scope&, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  grads->assign(op.node()->num_inputs(), g[0]);
  return Status::OK();
}

Status IdentityGrad(const Scope&, const Operation&, const std::vector<Output>& g, std::vector<Output>* grads) {
  *grads = {g[0]};
  return Status::OK();
}

Status NegGrad(const Scope& s, const Operation&, const std::vector<Output>& g, std::vector<Output>* grads) {
  *grads = {ops::Neg(s, g[0])};
  return s.status();
}

Status SquareGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  Output x = In(op, 0);
  *grads = {ops::Mul(s, g[0], ops::Add(s, x, x))};
  return s.status();
}

// d sqrt(x) = 1 / (2 sqrt(x)) = 0.5 / y.
Status SqrtGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  Output y = Out(op);
  *grads = {ops::Div(s, g[0], ops::Add(s, y, y))};
  return s.status();
}

Status ExpGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  *grads = {ops::Mul(s, g[0], Out(op))};
  return s.status();
}

// dy/dx = y (1 - y)
Status SigmoidGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  Output y = Out(op);
  *grads = {ops::Mul(s, g[0], ops::Mul(s, y, ops::Sub(s, ops::OnesLike(s, y), y)))};
  return s.status();
}

// dy/dx = 1 - y^2
Status TanhGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  Output y = Out(op);
  *grads = {ops::Mul(s, g[0], ops::Sub(s, ops::OnesLike(s, y), ops::Mul(s, y, y)))};
  return s.status();
}

// A constant of `dt` (the gradients' type) with value v.
Output Scalar(const Scope& s, double v, DataType dt) { return ops::Cast(s, v, dt); }

// d(x^y)/dx = y x^(y-1); d(x^y)/dy = x^y log(x), taken as 0 where x <= 0 (as TensorFlow).
Status PowGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output x = In(op, 0), y = In(op, 1), z = Out(op);
  const Output gx = ops::Mul(s, g[0], ops::Mul(s, y, ops::Build(s, "Pow", {x, ops::Sub(s, y, ops::OnesLike(s, y))})));
  // The log taken of x where positive and of 1 elsewhere, so that no inf or NaN is made
  // for a later gradient of this one to multiply by 0.
  const Output zeros = ops::ZerosLike(s, x);
  const Output positive = ops::Greater(s, x, zeros);
  const Output safe_x = ops::Build(s, "SelectV2", {positive, x, ops::OnesLike(s, x)});
  const Output log_x = ops::Build(s, "SelectV2", {positive, ops::Log(s, safe_x), zeros});
  return BinaryGrads(s, op, gx, ops::Mul(s, g[0], ops::Mul(s, z, log_x)), grads);
}

// d(x-y)^2 = 2(x-y) for x, its negation for y.
Status SquaredDifferenceGrad(const Scope& s, const Operation& op, const std::vector<Output>& g,
                             std::vector<Output>* grads) {
  const Output d = ops::Sub(s, In(op, 0), In(op, 1));
  const Output gx = ops::Mul(s, g[0], ops::Add(s, d, d));
  return BinaryGrads(s, op, gx, ops::Neg(s, gx), grads);
}

// d x^(-1/2) = -y^3 / 2.
Status RsqrtGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output y = Out(op);
  *grads = {ops::Mul(s, g[0], ops::Mul(s, ops::Mul(s, y, ops::Mul(s, y, y)), Scalar(s, -0.5, y.type())))};
  return s.status();
}

Status SinGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  *grads = {ops::Mul(s, g[0], ops::Build(s, "Cos", {In(op, 0)}))};
  return s.status();
}

Status CosGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  *grads = {ops::Neg(s, ops::Mul(s, g[0], ops::Build(s, "Sin", {In(op, 0)})))};
  return s.status();
}

// d erf(x) = 2/sqrt(pi) exp(-x^2).
Status ErfGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output x = In(op, 0);
  const Output slope = ops::Mul(s, Scalar(s, 1.1283791670955126, x.type()), ops::Exp(s, ops::Neg(s, ops::Mul(s, x, x))));
  *grads = {ops::Mul(s, g[0], slope)};
  return s.status();
}

// x mod y = x - floor(x/y) y: the gradient is g for x and -floor(x/y) g for y.
Status FloorModGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output quotient = ops::Build(s, "FloorDiv", {In(op, 0), In(op, 1)});
  return BinaryGrads(s, op, g[0], ops::Mul(s, g[0], ops::Neg(s, quotient)), grads);
}

Status StopGradientGrad(const Scope& s, const Operation&, const std::vector<Output>&, std::vector<Output>* grads) {
  *grads = {Output()};
  return s.status();
}

Status LogGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  *grads = {ops::Div(s, g[0], In(op, 0))};
  return s.status();
}

// For y = op(a, b) with the transposes applied: da = g b^T, db = a^T g, each written as one
// MatMul of the original operands.
Status MatMulGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  bool ta = false, tb = false;
  RETURN_IF_ERROR(op.node()->GetAttr("transpose_a", &ta));
  RETURN_IF_ERROR(op.node()->GetAttr("transpose_b", &tb));
  Output a = In(op, 0), b = In(op, 1), dy = g[0];
  if (!ta && !tb) {
    *grads = {ops::MatMul(s, dy, b, {.transpose_b = true}), ops::MatMul(s, a, dy, {.transpose_a = true})};
  } else if (!ta && tb) {
    *grads = {ops::MatMul(s, dy, b), ops::MatMul(s, dy, a, {.transpose_a = true})};
  } else if (ta && !tb) {
    *grads = {ops::MatMul(s, b, dy, {.transpose_b = true}), ops::MatMul(s, a, dy)};
  } else {
    *grads = {ops::MatMul(s, b, dy, {.transpose_a = true, .transpose_b = true}),
              ops::MatMul(s, dy, a, {.transpose_a = true, .transpose_b = true})};
  }
  return s.status();
}

// The result's shape with the reduced axes kept as 1, where the input's rank or the axes
// are known only when the step runs: a 0/1 mask of the reduced axes (axis == range(rank)),
// as the constant case below makes it when the graph is built.
Output ReducedShapeAtRunTime(const Scope& s, const Output& shape_x, const Output& axes) {
  Output rank = ops::Size(s, shape_x);
  // A scalar's rank is 0 and its axes none: the modulus kept at 1 or more so that no
  // division by zero is asked of FloorMod (a second derivative of x**3 reaches here).
  Output modulus = ops::Maximum(s, rank, 1);
  Output in_range =
      ops::Build(s, "FloorMod", {ops::Reshape(s, ops::Cast(s, axes, DataType::kInt32), {-1, 1}), modulus});
  Output hits = ops::Cast(s, ops::Equal(s, in_range, ops::Build(s, "Range", {0, rank, 1})), DataType::kInt32);
  Output reduced = ops::Minimum(s, ops::Sum(s, hits, 0), 1);
  return ops::Add(s, ops::Mul(s, shape_x, ops::Sub(s, 1, reduced)), reduced);
}

// The gradient of a reduction's result, broadcast back over the reduced axes.
StatusOr<Output> SpreadOverReducedAxes(const Scope& s, const Operation& op, const Output& g) {
  Output x = In(op, 0), axes = In(op, 1);
  const TensorShape sx = StaticShape(x);
  const Tensor* axes_value = nullptr;
  if (IsConstant(axes.node->op())) axes_value = axes.node->attrs().find("value")->second.get_if<Tensor>();
  if (axes_value == nullptr || sx.unknown_rank()) {
    Output shape_x = ops::Shape(s, x);
    return ops::BroadcastTo(s, ops::Reshape(s, g, ReducedShapeAtRunTime(s, shape_x, axes)), shape_x);
  }
  // The result's shape with the reduced axes kept as 1: the input's shape times a 0/1 mask,
  // plus the mask's complement.
  std::vector<int32_t> keep(sx.rank(), 1), ones(sx.rank(), 0);
  for (int64_t a : IntTensorValues(*axes_value)) {
    const int64_t axis = a < 0 ? a + sx.rank() : a;
    if (axis < 0 || axis >= sx.rank()) return errors::InvalidArgument("Reduction axis ", a, " out of range");
    keep[axis] = 0;
    ones[axis] = 1;
  }
  Output shape_x = ops::Shape(s, x);
  Output kept = ops::Add(s, ops::Mul(s, shape_x, Tensor::FromVector(keep)), Tensor::FromVector(ones));
  return ops::BroadcastTo(s, ops::Reshape(s, g, kept), shape_x);
}

Status SumGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  ASSIGN_OR_RETURN(Output spread, SpreadOverReducedAxes(s, op, g[0]));
  *grads = {spread, Output()};
  return s.status();
}

Status MeanGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  ASSIGN_OR_RETURN(Output spread, SpreadOverReducedAxes(s, op, g[0]));
  // Elements averaged into each result: size(x) / size(y).
  Output count = ops::Div(s, ops::Size(s, In(op, 0)), ops::Size(s, Out(op)));
  *grads = {ops::Div(s, spread, ops::Cast(s, count, Out(op).type())), Output()};
  return s.status();
}

// max(x) (or min(x)) reduced over axes: the gradient goes to the elements equal to the
// result, shared evenly among ties, as in TensorFlow.
Status MaxGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output x = In(op, 0);
  ASSIGN_OR_RETURN(Output max, SpreadOverReducedAxes(s, op, Out(op)));
  Output hits = ops::Cast(s, ops::Equal(s, x, max), x.type());
  ASSIGN_OR_RETURN(Output ties, SpreadOverReducedAxes(s, op, ops::Sum(s, hits, In(op, 1))));
  ASSIGN_OR_RETURN(Output spread, SpreadOverReducedAxes(s, op, g[0]));
  *grads = {ops::Div(s, ops::Mul(s, spread, hits), ties), Output()};
  return s.status();
}

// prod(x) over axes: each element's gradient is the product of the others, found without
// dividing by a zero: prod(nonzero)/x where the reduced group has no zero; where it has one,
// prod(nonzero) for that zero and 0 for the rest; 0 throughout where it has more.
Status ProdGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  bool keep_dims = false;
  RETURN_IF_ERROR(op.node()->GetAttr("keep_dims", &keep_dims));
  const Output x = In(op, 0), axes = In(op, 1);
  const Output zero = ops::ZerosLike(s, x);
  const Output is_zero = ops::Equal(s, x, zero);
  const Output nonzero = ops::Build(s, "SelectV2", {is_zero, ops::OnesLike(s, x), x});
  ASSIGN_OR_RETURN(Output others,
                   SpreadOverReducedAxes(s, op, ops::Build(s, "Prod", {nonzero, axes}, {{"keep_dims", keep_dims}})));
  ASSIGN_OR_RETURN(Output zeros, SpreadOverReducedAxes(s, op, ops::Sum(s, ops::Cast(s, is_zero, x.type()), axes,
                                                                       {.keep_dims = keep_dims})));
  const Output none = ops::Equal(s, zeros, ops::ZerosLike(s, zeros));
  const Output the_zero = ops::Build(s, "LogicalAnd", {ops::Equal(s, zeros, ops::OnesLike(s, zeros)), is_zero});
  const Output local = ops::Build(s, "SelectV2", {none, ops::Div(s, others, nonzero),
                                                  ops::Build(s, "SelectV2", {the_zero, others, zero})});
  ASSIGN_OR_RETURN(Output spread, SpreadOverReducedAxes(s, op, g[0]));
  *grads = {ops::Mul(s, spread, local), Output()};
  return s.status();
}

// Reshape, Squeeze and ExpandDims change only the shape: the gradient takes the input's back.
Status ReshapeLikeInputGrad(const Scope& s, const Operation& op, const std::vector<Output>& g,
                            std::vector<Output>* grads) {
  grads->assign(op.node()->num_inputs(), Output());
  (*grads)[0] = ops::Reshape(s, g[0], ops::Shape(s, In(op, 0)));
  return s.status();
}

Status SplitGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  std::vector<Input> parts(g.begin(), g.end());
  *grads = {Output(), ops::Concat(s, parts, In(op, 0))};
  return s.status();
}

Status SplitVGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  std::vector<Input> parts(g.begin(), g.end());
  *grads = {ops::Concat(s, parts, In(op, 2)), Output(), Output()};
  return s.status();
}

// The gradient cuts g back into the inputs' extents along the axis, which must be a constant;
// sizes unknown when the graph is built (a loop variable that grows) are read when it runs.
Status ConcatGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const int n = op.node()->num_inputs() - 1;
  const Output axis_input = In(op, n);
  Tensor axis_value;
  const TensorShape first = StaticShape(In(op, 0));
  if (!IsConstant(axis_input.node->op()) || !axis_input.node->GetAttr("value", &axis_value).ok()) {
    return errors::Unimplemented("The gradient of ConcatV2 '", op.name(), "' needs a constant axis");
  }
  int64_t axis = IntTensorValues(axis_value)[0];
  if (axis < 0 && first.unknown_rank()) {
    return errors::Unimplemented("The gradient of ConcatV2 '", op.name(), "' needs a known rank for axis ", axis);
  }
  if (axis < 0) axis += first.rank();
  std::vector<int64_t> sizes;
  bool all_known = true;
  for (int i = 0; i < n; ++i) {
    const TensorShape shape = StaticShape(In(op, i));
    all_known = all_known && !shape.unknown_rank() && shape.dim(static_cast<int>(axis)) >= 0;
    sizes.push_back(all_known ? shape.dim(static_cast<int>(axis)) : -1);
  }
  Input size_splits = Tensor::FromVector(sizes);
  if (!all_known) {
    std::vector<Input> parts;
    for (int i = 0; i < n; ++i) {
      const Tensor begin = Tensor::FromVector<int32_t>({static_cast<int32_t>(axis)});
      parts.push_back(ops::Build(s, "Slice", {ops::Shape(s, In(op, i)), begin, Tensor::FromVector<int32_t>({1})}));
    }
    size_splits = ops::Concat(s, parts, 0);
  }
  *grads = ops::SplitV(s, g[0], size_splits, static_cast<int32_t>(axis), n);
  grads->push_back(Output());
  return s.status();
}

// Fill's value is in every element: its gradient is the sum of g.
Status FillGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output rank = ops::Build(s, "Size", {ops::Shape(s, g[0])});
  const Output axes = ops::Build(s, "Range", {0, rank, 1});
  *grads = {Output(), ops::Sum(s, g[0], axes)};
  return s.status();
}

bool IsFloating(DataType dt) {
  return dt == DataType::kFloat || dt == DataType::kDouble || dt == DataType::kHalf || dt == DataType::kBFloat16;
}

// Only between floating types: an integer has no gradient.
Status CastGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const DataType src = In(op, 0).type();
  *grads = {IsFloating(src) && IsFloating(Out(op).type()) ? ops::Cast(s, g[0], src) : Output()};
  return s.status();
}

Status NoGradient(const Scope&, const Operation&, const std::vector<Output>&, std::vector<Output>* grads) {
  grads->clear();
  return Status::OK();
}

// The gradient goes to the operand the condition chose, element by element; each operand's
// share summed back to its shape where the select broadcast it (SelectV2).
Status SelectGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output c = In(op, 0), zeros = ops::ZerosLike(s, g[0]);
  const Output gx = ops::Build(s, op.node()->op(), {c, g[0], zeros});
  const Output gy = ops::Build(s, op.node()->op(), {c, zeros, g[0]});
  *grads = {Output(), Unbroadcast(s, gx, In(op, 1), Out(op)), Unbroadcast(s, gy, In(op, 2), Out(op))};
  return s.status();
}

// Einsum of two operands, as TensorFlow's _EinsumGrad: an operand's gradient is the einsum
// of the output's gradient with the other operand, giving the operand's labels. (Einsum
// runs no label summed within one operand, so none needs broadcasting back.)
Status EinsumGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  std::string equation;
  RETURN_IF_ERROR(op.node()->GetAttr("equation", &equation));
  const size_t arrow = equation.find("->"), comma = equation.find(',');
  if (op.node()->num_inputs() != 2 || arrow == std::string::npos || comma > arrow) {
    return errors::Unimplemented("No gradient for Einsum '", equation, "' (", op.node()->name(),
                                 "): two operands and an explicit output are supported");
  }
  const std::string subs[2] = {equation.substr(0, comma), equation.substr(comma + 1, arrow - comma - 1)};
  const std::string out = equation.substr(arrow + 2);
  grads->clear();
  for (int i = 0; i < 2; ++i) {
    grads->push_back(ops::Build(s, "Einsum", {g[0], In(op, 1 - i)},
                                {{"equation", StrCat(out, ",", subs[1 - i], "->", subs[i])}}));
  }
  return s.status();
}

}  // namespace

void RegisterMathGradients(GradientRegistry& r) {
  RegisterCoreGradient(r, "Add", AddGrad);
  RegisterCoreGradient(r, "AddV2", AddGrad);
  RegisterCoreGradient(r, "RealDiv", DivGrad);
  RegisterCoreGradient(r, "Sub", SubGrad);
  RegisterCoreGradient(r, "Mul", MulGrad);
  RegisterCoreGradient(r, "Div", DivGrad);
  RegisterCoreGradient(r, "AddN", AddNGrad);
  RegisterCoreGradient(r, "Identity", IdentityGrad);
  RegisterCoreGradient(r, "PlaceholderWithDefault", IdentityGrad);
  RegisterCoreGradient(r, "Neg", NegGrad);
  RegisterCoreGradient(r, "Square", SquareGrad);
  RegisterCoreGradient(r, "Sqrt", SqrtGrad);
  RegisterCoreGradient(r, "Exp", ExpGrad);
  RegisterCoreGradient(r, "Log", LogGrad);
  RegisterCoreGradient(r, "Sigmoid", SigmoidGrad);
  RegisterCoreGradient(r, "Tanh", TanhGrad);
  RegisterCoreGradient(r, "StopGradient", StopGradientGrad);
  RegisterCoreGradient(r, "MatMul", MatMulGrad);
  RegisterCoreGradient(r, "Sum", SumGrad);
  RegisterCoreGradient(r, "Mean", MeanGrad);
  RegisterCoreGradient(r, "Reshape", ReshapeLikeInputGrad);
  RegisterCoreGradient(r, "Max", MaxGrad);
  RegisterCoreGradient(r, "Min", MaxGrad);
  RegisterCoreGradient(r, "Prod", ProdGrad);
  RegisterCoreGradient(r, "Einsum", EinsumGrad);
  RegisterCoreGradient(r, "Pow", PowGrad);
  RegisterCoreGradient(r, "SquaredDifference", SquaredDifferenceGrad);
  RegisterCoreGradient(r, "Rsqrt", RsqrtGrad);
  RegisterCoreGradient(r, "Sin", SinGrad);
  RegisterCoreGradient(r, "Cos", CosGrad);
  RegisterCoreGradient(r, "Erf", ErfGrad);
  RegisterCoreGradient(r, "FloorMod", FloorModGrad);
  RegisterCoreGradient(r, "Maximum", MaximumGrad);
  RegisterCoreGradient(r, "Minimum", MinimumGrad);
  RegisterCoreGradient(r, "BroadcastTo", BroadcastToGrad);
  RegisterCoreGradient(r, "Split", SplitGrad);
  RegisterCoreGradient(r, "SplitV", SplitVGrad);
  RegisterCoreGradient(r, "ConcatV2", ConcatGrad);
  RegisterCoreGradient(r, "Fill", FillGrad);
  RegisterCoreGradient(r, "Cast", CastGrad);
  RegisterCoreGradient(r, "Squeeze", ReshapeLikeInputGrad);
  RegisterCoreGradient(r, "ExpandDims", ReshapeLikeInputGrad);
  RegisterCoreGradient(r, "Select", SelectGrad);
  RegisterCoreGradient(r, "SelectV2", SelectGrad);
  // Ops whose outputs carry no gradient back (TensorFlow's NotDifferentiable): a path through
  // them, such as dropout's mask from the shape of its input, ends there.
  for (const char* op : {"Shape", "Size", "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
                         "LogicalAnd", "LogicalOr", "LogicalNot", "ArgMax", "RandomUniform", "RandomStandardNormal",
                         "TruncatedNormal", "ZerosLike", "OnesLike", "Range", "BroadcastGradientArgs", "FloorDiv",
                         "TruncateDiv", "PyFunc"}) {
    RegisterCoreGradient(r, op, NoGradient);
  }
}

}  // namespace tessera
