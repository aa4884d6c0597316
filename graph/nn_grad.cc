// Gradients of the neural-network ops, following TensorFlow's nn_grad.
#include "graph/gradients.h"
#include "graph/ops.h"

namespace tessera {
namespace {

Status ReluGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  *grads = {ops::ReluGrad(s, g[0], Output(op.node(), 0))};
  return s.status();
}

// dx = (g - sum(g * y, last axis)) * y, with y the softmax.
Status SoftmaxGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  Output y(op.node(), 0);
  Output dot = ops::Sum(s, ops::Mul(s, g[0], y), Tensor::FromVector<int32_t>({-1}), {.keep_dims = true});
  *grads = {ops::Mul(s, ops::Sub(s, g[0], dot), y)};
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
  RegisterCoreGradient(r, "Softmax", SoftmaxGrad);
  RegisterCoreGradient(r, "BiasAdd", BiasAddGrad);
}

}  // namespace tessera
