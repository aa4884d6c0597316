// Gradients of the neural-network ops, following TensorFlow's nn_grad.
#include "graph/builder/gradients.h"
#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"

namespace tessera {
namespace {

Status ReluGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  *grads = {ops::ReluGrad(s, g[0], Output(op.node(), 0))};
  return s.status();
}

// The gradient passes where 0 < x < 6, as TensorFlow's Relu6Grad.
Status Relu6Grad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Output x = OpInput(op, 0);
  const Output inside = ops::Build(s, "LogicalAnd", {ops::Greater(s, x, ops::ZerosLike(s, x)),
                                                    ops::Less(s, x, ops::Cast(s, 6.0, x.type()))});
  *grads = {ops::Mul(s, g[0], ops::Cast(s, inside, x.type()))};
  return s.status();
}

// dx = (g - sum(g * y, last axis)) * y, with y the softmax.
Status SoftmaxGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  Output y(op.node(), 0);
  Output dot = ops::Sum(s, ops::Mul(s, g[0], y), Tensor::FromVector<int32_t>({-1}), {.keep_dims = true});
  *grads = {ops::Mul(s, ops::Sub(s, g[0], dot), y)};
  return s.status();
}

// dx = g - sum(g, last axis) * softmax, with softmax = exp(y).
Status LogSoftmaxGrad(const Scope& s, const Operation& op, const std::vector<Output>& g,
                      std::vector<Output>* grads) {
  Output total = ops::Sum(s, g[0], Tensor::FromVector<int32_t>({-1}), {.keep_dims = true});
  *grads = {ops::Sub(s, g[0], ops::Mul(s, total, ops::Exp(s, Output(op.node(), 0))))};
  return s.status();
}

// The op computes its own gradient (backprop); the loss's gradient scales each row of it.
// Labels have none, and the gradient of backprop itself is not propagated.
Status SparseXentGrad(const Scope& s, const Operation& op, const std::vector<Output>& g,
                      std::vector<Output>* grads) {
  Output per_row = ops::Reshape(s, g[0], {-1, 1});
  *grads = {ops::Mul(s, per_row, Output(op.node(), 1)), Output()};
  return s.status();
}

struct Window {
  std::vector<int64_t> ksize, strides;
  std::string padding;
};
StatusOr<Window> WindowOf(const Operation& op, bool pool) {
  Window w;
  if (pool) RETURN_IF_ERROR(op.node()->GetAttr("ksize", &w.ksize));
  RETURN_IF_ERROR(op.node()->GetAttr("strides", &w.strides));
  RETURN_IF_ERROR(op.node()->GetAttr("padding", &w.padding));
  return w;
}

Status Conv2DGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  ASSIGN_OR_RETURN(Window w, WindowOf(op, false));
  Output x = OpInput(op, 0), f = OpInput(op, 1);
  *grads = {ops::Conv2DBackpropInput(s, ops::Shape(s, x), f, g[0], w.strides, w.padding),
            ops::Conv2DBackpropFilter(s, x, ops::Shape(s, f), g[0], w.strides, w.padding)};
  return s.status();
}

Status DepthwiseConv2dGrad(const Scope& s, const Operation& op, const std::vector<Output>& g,
                           std::vector<Output>* grads) {
  ASSIGN_OR_RETURN(Window w, WindowOf(op, false));
  const AttrMap attrs{{"strides", w.strides}, {"padding", w.padding}};
  Output x = OpInput(op, 0), f = OpInput(op, 1);
  *grads = {ops::Build(s, "DepthwiseConv2dNativeBackpropInput", {ops::Shape(s, x), f, g[0]}, attrs),
            ops::Build(s, "DepthwiseConv2dNativeBackpropFilter", {x, ops::Shape(s, f), g[0]}, attrs)};
  return s.status();
}

// conv2d_transpose: the gradient of a convolution's gradient, as TensorFlow's.
Status Conv2DBackpropInputGrad(const Scope& s, const Operation& op, const std::vector<Output>& g,
                               std::vector<Output>* grads) {
  ASSIGN_OR_RETURN(Window w, WindowOf(op, false));
  Output f = OpInput(op, 1), dy = OpInput(op, 2);
  *grads = {Output(), ops::Conv2DBackpropFilter(s, g[0], ops::Shape(s, f), dy, w.strides, w.padding),
            ops::Conv2D(s, g[0], f, w.strides, w.padding)};
  return s.status();
}

Status MaxPoolGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  ASSIGN_OR_RETURN(Window w, WindowOf(op, true));
  *grads = {ops::MaxPoolGrad(s, OpInput(op, 0), Output(op.node(), 0), g[0], w.ksize, w.strides, w.padding)};
  return s.status();
}

Status AvgPoolGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  ASSIGN_OR_RETURN(Window w, WindowOf(op, true));
  *grads = {ops::AvgPoolGrad(s, ops::Shape(s, OpInput(op, 0)), g[0], w.ksize, w.strides, w.padding)};
  return s.status();
}

Status BiasAddGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  std::string format;
  RETURN_IF_ERROR(op.node()->GetAttr("data_format", &format));
  *grads = {g[0], ops::BiasAddGrad(s, g[0], format)};
  return s.status();
}

}  // namespace

void RegisterNnGradients(GradientRegistry& r) {
  RegisterCoreGradient(r, "Relu", ReluGrad);
  RegisterCoreGradient(r, "Relu6", Relu6Grad);
  RegisterCoreGradient(r, "Softmax", SoftmaxGrad);
  RegisterCoreGradient(r, "LogSoftmax", LogSoftmaxGrad);
  RegisterCoreGradient(r, "SparseSoftmaxCrossEntropyWithLogits", SparseXentGrad);
  RegisterCoreGradient(r, "BiasAdd", BiasAddGrad);
  RegisterCoreGradient(r, "Conv2D", Conv2DGrad);
  RegisterCoreGradient(r, "Conv2DBackpropInput", Conv2DBackpropInputGrad);
  RegisterCoreGradient(r, "DepthwiseConv2dNative", DepthwiseConv2dGrad);
  RegisterCoreGradient(r, "MaxPool", MaxPoolGrad);
  RegisterCoreGradient(r, "AvgPool", AvgPoolGrad);
}

}  // namespace tessera
