// Gradients of tf.cond's Switch and Merge, following TensorFlow's control_flow_grad: the
// gradient of a cond's Merge goes back through a Switch on the cond's predicate to the
// branch that ran; a Switch's gradient is the Merge of its two outputs' gradients, the one
// of the branch that did not run being dead (zeros made in that branch, as the builder
// makes them for an output no gradient reached, run only where the branch runs). A while
// loop's gradient is a loop of its own, which the builder makes for the loop as a whole
// (gradients.cc), which never reaches the loop's own Switch, Merge or NextIteration.
#include "graph/builder/gradients.h"
#include "graph/builder/op_builder.h"
#include "graph/control_flow_frames.h"
#include "graph/op_kinds.h"

namespace tessera {
namespace {

Output InputOf(const Node& n, int i) { return Output(n.input_edge(i)->src, n.input_edge(i)->src_output); }

// The predicate of the cond whose Merge is `merge`. As tf.cond builds one, each branch's
// output is an Identity that waits on the branch's pivot, an Identity of Switch(pred, pred);
// a branch returning a tensor from outside returns it through a Switch on the predicate.
StatusOr<Output> CondPredicate(const Node& merge) {
  for (int i = 0; i < merge.num_inputs(); ++i) {
    const Node* out = merge.input_edge(i)->src;
    for (const Edge* c : out->control_inputs()) {
      const Node* pivot = c->src;
      if (pivot->op() == "Identity" && IsSwitch(pivot->input_edge(0)->src->op()) &&
          !IsLoopSwitch(*pivot->input_edge(0)->src)) {
        return InputOf(*pivot->input_edge(0)->src, 1);
      }
    }
    const Node* sw = out->op() == "Identity" ? out->input_edge(0)->src : nullptr;
    if (sw != nullptr && IsSwitch(sw->op()) && !IsLoopSwitch(*sw)) return InputOf(*sw, 1);
  }
  return errors::Unimplemented("No gradient for ", merge.DebugName(),
                               ": it is not the Merge of a tf.cond this process built");
}

Status MergeGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  const Node& merge = *op.node();
  if (merge.num_inputs() != 2) {
    return errors::Unimplemented("No gradient for ", merge.DebugName(), ": a cond's Merge has 2 inputs");
  }
  ASSIGN_OR_RETURN(Output pred, CondPredicate(merge));
  // Input 0 is the false branch's, input 1 the true branch's: Switch's outputs in order.
  *grads = ops::AllOutputs(ops::Build(s, "Switch", {g[0], pred}));
  return s.status();
}

Status SwitchGrad(const Scope& s, const Operation& op, const std::vector<Output>& g, std::vector<Output>* grads) {
  *grads = {ops::Build(s, "Merge", {g[0], g[1]}), Output()};
  return s.status();
}

}  // namespace

void RegisterControlFlowGradients(GradientRegistry& r) {
  RegisterCoreGradient(r, "Switch", SwitchGrad);
  RegisterCoreGradient(r, "Merge", MergeGrad);
}

}  // namespace tessera
