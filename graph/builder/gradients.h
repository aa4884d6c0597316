// Symbolic differentiation of graphs built with Scope: tf.gradients for C++.
//
//   std::vector<Output> grads;
//   Status s = AddSymbolicGradients(root, {loss}, {w, b}, &grads);
//   // grads[0] = d loss / d w, grads[1] = d loss / d b, as new ops in root's graph
//
// The builder walks back from the outputs over data edges and calls each op's gradient
// function, registered by op name beside the ops (graph/builder/math_grad.cc, graph/builder/nn_grad.cc).
// A gradient function gets the gradients of an op's outputs and adds ops that give the
// gradients of its inputs; several gradients reaching one tensor are summed with AddN.
// A TensorFlow 1.x while loop (Enter/Merge/Switch/Exit, as tf.while_loop builds it) gets a
// gradient loop as TensorFlow's: the forward loop saves what the body's gradient reads on
// stacks, the gradient loop pops it, last iteration first; loops in loops and conds in loops
// included.
//
// Like every graph-building call, run it from the one thread building the graph. The
// registry is filled once, on first use, and only read afterwards.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/builder/scope.h"

namespace tessera {

struct GradientOptions {
  // d(something)/d(output i) to start from; empty means ones (the gradient of the sum).
  std::vector<Output> grad_outputs;
  // Put each gradient op on its forward op's device, as tf.gradients'
  // colocate_gradients_with_ops does; otherwise the scope's device rules apply.
  bool colocate_gradients_with_ops = true;
  // An input no gradient reaches (no path, or only through ops without one, such as Shape):
  // zeros of its shape, or an empty Output, which tf.gradients makes None.
  bool zeros_for_unreached = true;
};

// Adds the ops computing d(sum of outputs)/d(inputs[i]) to `scope`'s graph. An input the
// outputs do not depend on gets zeros (or nothing: zeros_for_unreached). NotFound names the op on the path that has no
// gradient function; errors of building a gradient name the forward op.
Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& outputs,
                            const std::vector<Output>& inputs, std::vector<Output>* grads,
                            const GradientOptions& options = {});

// The gradient function of one op. `grad_outputs` has one entry per output of `op` (an
// output no path reaches gets zeros); the function fills `grad_inputs` with one entry per
// data input, leaving an empty Output where an input has no gradient (a shape, an index).
using GradientFunction = std::function<Status(const Scope& scope, const Operation& op,
                                              const std::vector<Output>& grad_outputs,
                                              std::vector<Output>* grad_inputs)>;

class GradientRegistry {
 public:
  // The process-wide registry, holding the gradients of the core ops.
  static GradientRegistry* Global();
  // AlreadyExists for a second function for one op. Register before building gradients.
  Status Register(const std::string& op, GradientFunction fn);
  // nullptr when `op` has none.
  const GradientFunction* Find(const std::string& op) const;

 private:
  std::map<std::string, GradientFunction, std::less<>> fns_;
};

// For gradient functions: the tensor feeding data input i of `op`.
Output OpInput(const Operation& op, int i);

// The files that register core gradients; GradientRegistry::Global calls them.
void RegisterMathGradients(GradientRegistry& registry);
void RegisterArrayGradients(GradientRegistry& registry);
void RegisterNnGradients(GradientRegistry& registry);
void RegisterControlFlowGradients(GradientRegistry& registry);
// Registers a core gradient, aborting on a duplicate: that is a bug in Tessera.
void RegisterCoreGradient(GradientRegistry& registry, const std::string& op, GradientFunction fn);

}  // namespace tessera
