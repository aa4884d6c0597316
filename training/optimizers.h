// Optimizers in the manner of tf.train: each adds the ops that update variables in place
// from their gradients, with TensorFlow 1.x's update rules and slot names.
//
//   GlobalStep step = CreateGlobalStep(root);
//   RMSPropOptimizer opt({.learning_rate = 1e-3});
//   StatusOr<Training> t = opt.Minimize(root, loss, {w, b}, step.var);
//   // run step.init, t->init and the variables' own initializers once, then t->train per step
//
// An optimizer is an immutable value; using one from several threads builds into their
// scopes independently. Building itself follows Scope's rule: one thread per graph.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/builder/gradients.h"

namespace tessera {

struct Training {
  Operation train;  // one step: every variable's update, then global_step += 1 if given
  Operation init;   // initializes the optimizer's own variables (accumulators, Adam's powers)
};

struct GlobalStep {
  Output var;  // an int64 scalar variable "global_step"
  Operation init;
};
GlobalStep CreateGlobalStep(const Scope& scope);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Updates each variable (a VariableV2 output, float32 or float64, of fully defined
  // shape) by its gradient.
  StatusOr<Training> ApplyGradients(const Scope& scope, const std::vector<std::pair<Output, Output>>& grads_and_vars,
                                    Output global_step = Output()) const;
  // AddSymbolicGradients of `loss` for `vars`, then ApplyGradients.
  StatusOr<Training> Minimize(const Scope& scope, Output loss, const std::vector<Output>& vars,
                              Output global_step = Output()) const;

 protected:
  // The name slots and ops go under ("RMSProp", ...).
  virtual std::string Name() const = 0;
  // Variables one ApplyGradients call shares among its updates (Adam's beta powers), made
  // beside `first_var`. None by default.
  virtual std::vector<Output> Prepare(const Scope& scope, const Output& first_var,
                                      std::vector<Operation>* inits) const;
  // Adds the update of `var` in `scope`. The optimizer's variables it makes (in
  // `slot_scope`, so named "<var>/<Name>" as TensorFlow names them) go with their
  // initializers into *inits.
  virtual Output ApplyDense(const Scope& scope, const Scope& slot_scope, const Output& grad, const Output& var,
                            const std::vector<Output>& shared, std::vector<Operation>* inits) const = 0;
  // Ops that run after every update of a step (Adam advancing its powers). None by default.
  virtual std::vector<Operation> Finish(const Scope& scope, const std::vector<Operation>& updates,
                                        const std::vector<Output>& shared) const;

  // A variable shaped like `var` named "<var>/<name>" beside it, initialised to `value`.
  static Output Slot(const Scope& scope, const Output& var, const std::string& name, double value,
                     std::vector<Operation>* inits);
  // A scalar constant of `var`'s dtype.
  static Output Hyper(const Scope& scope, const Output& var, double value);
};

class GradientDescentOptimizer : public Optimizer {
 public:
  explicit GradientDescentOptimizer(double learning_rate) : learning_rate_(learning_rate) {}

 protected:
  std::string Name() const override { return "GradientDescent"; }
  Output ApplyDense(const Scope& scope, const Scope& slot_scope, const Output& grad, const Output& var,
                    const std::vector<Output>& shared, std::vector<Operation>* inits) const override;

 private:
  double learning_rate_;
};

struct MomentumOptions {
  double learning_rate = 0.01;
  double momentum = 0.9;
  bool use_nesterov = false;
};
class MomentumOptimizer : public Optimizer {
 public:
  explicit MomentumOptimizer(const MomentumOptions& options) : o_(options) {}

 protected:
  std::string Name() const override { return "Momentum"; }
  Output ApplyDense(const Scope& scope, const Scope& slot_scope, const Output& grad, const Output& var,
                    const std::vector<Output>& shared, std::vector<Operation>* inits) const override;

 private:
  MomentumOptions o_;
};

struct RMSPropOptions {
  double learning_rate = 0.001;
  double decay = 0.9;  // rho
  double momentum = 0.0;
  double epsilon = 1e-10;
  // TensorFlow 1.x starts the mean square at 1; Keras and PyTorch start it at 0.
  double initial_mean_square = 1.0;
};
class RMSPropOptimizer : public Optimizer {
 public:
  explicit RMSPropOptimizer(const RMSPropOptions& options) : o_(options) {}

 protected:
  std::string Name() const override { return "RMSProp"; }
  Output ApplyDense(const Scope& scope, const Scope& slot_scope, const Output& grad, const Output& var,
                    const std::vector<Output>& shared, std::vector<Operation>* inits) const override;

 private:
  RMSPropOptions o_;
};

struct AdamOptions {
  double learning_rate = 0.001;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
};
class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(const AdamOptions& options) : o_(options) {}

 protected:
  std::string Name() const override { return "Adam"; }
  Output ApplyDense(const Scope& scope, const Scope& slot_scope, const Output& grad, const Output& var,
                    const std::vector<Output>& shared, std::vector<Operation>* inits) const override;
  // beta1^t and beta2^t, one pair per ApplyGradients as in TensorFlow.
  std::vector<Output> Prepare(const Scope& scope, const Output& first_var, std::vector<Operation>* inits) const override;
  std::vector<Operation> Finish(const Scope& scope, const std::vector<Operation>& updates,
                                const std::vector<Output>& shared) const override;

 private:
  AdamOptions o_;
};

}  // namespace tessera
