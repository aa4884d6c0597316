#include "training/optimizers.h"

#include "graph/builder/ops.h"

namespace tessera {
namespace {

Operation Group(const Scope& scope, const std::vector<Operation>& deps) {
  return ops::NoOp(scope.WithControlDependencies(deps));
}

Status CheckVariable(const Output& var) {
  if (var.node == nullptr) return errors::InvalidArgument("An optimizer got an empty variable");
  if (var.node->op() != "VariableV2") {
    return errors::InvalidArgument("'", var.name(), "' is not a variable (it is ", var.node->op(), ")");
  }
  const DataType dt = var.node->output_type(var.index);
  if (dt != DataType::kFloat && dt != DataType::kDouble) {
    return errors::InvalidArgument("Variable '", var.name(), "' is ", DataTypeName(dt),
                                   "; optimizers update float32 and float64 variables");
  }
  if (!var.node->output_shape(var.index).IsFullyDefined()) {
    return errors::InvalidArgument("Variable '", var.name(), "' needs a fully defined shape for its slots");
  }
  return Status::OK();
}

}  // namespace

GlobalStep CreateGlobalStep(const Scope& scope) {
  Output var = ops::Variable(scope.WithOpName("global_step"), TensorShape(), DataType::kInt64);
  if (var.node == nullptr) return {};
  // Beside the variable whatever device function is in force (a ps for replica devices).
  Output init = ops::Assign(scope.WithOpName("global_step/Assign").ColocateWith(var), var, Tensor::Scalar<int64_t>(0));
  return {var, init.op()};
}

StatusOr<Training> Optimizer::ApplyGradients(const Scope& scope,
                                             const std::vector<std::pair<Output, Output>>& grads_and_vars,
                                             Output global_step) const {
  RETURN_IF_ERROR(scope.status());
  if (grads_and_vars.empty()) return errors::InvalidArgument("No variables to optimize");
  for (const auto& [grad, var] : grads_and_vars) {
    RETURN_IF_ERROR(CheckVariable(var));
    if (grad.node == nullptr) return errors::InvalidArgument("No gradient for variable '", var.name(), "'");
  }
  Scope s = scope.NewSubScope(Name());
  std::vector<Operation> inits, updates;
  const std::vector<Output> shared = Prepare(scope, grads_and_vars[0].second, &inits);
  for (const auto& [grad, var] : grads_and_vars) {
    // Each update lives with its variable, as TensorFlow colocates them.
    Scope at_var = s.NewSubScope(StrCat("update_", var.node->name())).ColocateWith(var);
    updates.push_back(ApplyDense(at_var, scope, grad, var, shared, &inits).op());
  }
  std::vector<Operation> done = Finish(s, updates, shared);
  done.insert(done.begin(), updates.begin(), updates.end());
  Training t;
  if (global_step.node != nullptr) {
    Output inc = ops::AssignAdd(s.WithOpName("increment_global_step").WithControlDependencies(done).ColocateWith(
                                    global_step),
                                global_step, Tensor::Scalar<int64_t>(1));
    t.train = Group(scope.WithOpName(Name()), {inc.op()});
  } else {
    t.train = Group(scope.WithOpName(Name()), done);
  }
  t.init = Group(s.WithOpName("init"), inits);
  RETURN_IF_ERROR(scope.status());
  return t;
}

StatusOr<Training> Optimizer::Minimize(const Scope& scope, Output loss, const std::vector<Output>& vars,
                                       Output global_step) const {
  std::vector<Output> grads;
  RETURN_IF_ERROR(AddSymbolicGradients(scope, {loss}, vars, &grads));
  std::vector<std::pair<Output, Output>> pairs;
  for (size_t i = 0; i < vars.size(); ++i) pairs.emplace_back(grads[i], vars[i]);
  return ApplyGradients(scope, pairs, global_step);
}

std::vector<Output> Optimizer::Prepare(const Scope&, const Output&, std::vector<Operation>*) const { return {}; }

std::vector<Operation> Optimizer::Finish(const Scope&, const std::vector<Operation>&,
                                         const std::vector<Output>&) const {
  return {};
}

Output Optimizer::Slot(const Scope& scope, const Output& var, const std::string& name, double value,
                       std::vector<Operation>* inits) {
  const std::string slot_name = StrCat(var.node->name(), "/", name);
  Scope at_var = scope.ColocateWith(var);
  const DataType dt = var.type();
  const TensorShape& shape = var.node->output_shape(var.index);
  Output slot = ops::Variable(at_var.WithOpName(slot_name), shape, dt);
  Tensor fill(dt, shape);
  for (int64_t i = 0; i < fill.NumElements(); ++i) {
    if (dt == DataType::kDouble) {
      fill.data<double>()[i] = value;
    } else {
      fill.data<float>()[i] = static_cast<float>(value);
    }
  }
  inits->push_back(ops::Assign(at_var.WithOpName(slot_name + "/Assign"), slot, fill).op());
  return slot;
}

Output Optimizer::Hyper(const Scope& scope, const Output& var, double value) {
  return var.type() == DataType::kDouble ? ops::Const(scope, Tensor::Scalar<double>(value))
                                         : ops::Const(scope, Tensor::Scalar<float>(static_cast<float>(value)));
}

Output GradientDescentOptimizer::ApplyDense(const Scope& s, const Scope&, const Output& grad, const Output& var,
                                            const std::vector<Output>&, std::vector<Operation>*) const {
  return ops::ApplyGradientDescent(s, var, Hyper(s, var, learning_rate_), grad);
}

Output MomentumOptimizer::ApplyDense(const Scope& s, const Scope& slots, const Output& grad, const Output& var,
                                     const std::vector<Output>&, std::vector<Operation>* inits) const {
  Output accum = Slot(slots, var, "Momentum", 0.0, inits);
  return ops::ApplyMomentum(s, var, accum, Hyper(s, var, o_.learning_rate), grad, Hyper(s, var, o_.momentum),
                            o_.use_nesterov);
}

Output RMSPropOptimizer::ApplyDense(const Scope& s, const Scope& slots, const Output& grad, const Output& var,
                                    const std::vector<Output>&, std::vector<Operation>* inits) const {
  Output ms = Slot(slots, var, "RMSProp", o_.initial_mean_square, inits);
  Output mom = Slot(slots, var, "RMSProp_1", 0.0, inits);
  return ops::ApplyRMSProp(s, var, ms, mom, Hyper(s, var, o_.learning_rate), Hyper(s, var, o_.decay),
                           Hyper(s, var, o_.momentum), Hyper(s, var, o_.epsilon), grad);
}

std::vector<Output> AdamOptimizer::Prepare(const Scope& s, const Output& first_var,
                                           std::vector<Operation>* inits) const {
  Scope at_var = s.ColocateWith(first_var);
  std::vector<Output> powers;
  for (const auto& [name, beta] : {std::pair{"beta1_power", o_.beta1}, std::pair{"beta2_power", o_.beta2}}) {
    Output p = ops::Variable(at_var.WithOpName(name), TensorShape(), first_var.type());
    inits->push_back(ops::Assign(at_var.WithOpName(StrCat(name, "/Assign")), p, Hyper(at_var, first_var, beta)).op());
    powers.push_back(p);
  }
  return powers;
}

Output AdamOptimizer::ApplyDense(const Scope& s, const Scope& slots, const Output& grad, const Output& var,
                                 const std::vector<Output>& shared, std::vector<Operation>* inits) const {
  Output m = Slot(slots, var, "Adam", 0.0, inits);
  Output v = Slot(slots, var, "Adam_1", 0.0, inits);
  // The powers are read as values, so every variable's update of a step sees the same t.
  return ops::ApplyAdam(s, var, m, v, ops::Identity(s, shared[0]), ops::Identity(s, shared[1]),
                        Hyper(s, var, o_.learning_rate), Hyper(s, var, o_.beta1), Hyper(s, var, o_.beta2),
                        Hyper(s, var, o_.epsilon), grad);
}

std::vector<Operation> AdamOptimizer::Finish(const Scope& s, const std::vector<Operation>& updates,
                                             const std::vector<Output>& shared) const {
  Scope after = s.WithControlDependencies(updates).ColocateWith(shared[0]);
  return {ops::Assign(after.WithOpName("update_beta1_power"), shared[0],
                      ops::Mul(after, shared[0], Hyper(after, shared[0], o_.beta1))).op(),
          ops::Assign(after.WithOpName("update_beta2_power"), shared[1],
                      ops::Mul(after, shared[1], Hyper(after, shared[1], o_.beta2))).op()};
}

}  // namespace tessera
