#include "graph/builder/gradients.h"

#include <cstdlib>
#include <deque>
#include <iostream>

#include "graph/builder/ops.h"

namespace tessera {
namespace {

using Slot = std::pair<const Node*, int>;  // one output of a node

// The gradient graph of one AddSymbolicGradients call.
class GradientBuilder {
 public:
  GradientBuilder(const Scope& scope, const GradientOptions& options)
      : scope_(scope.NewSubScope("gradients")), options_(options) {}

  Status Build(const std::vector<Output>& outputs, const std::vector<Output>& inputs, std::vector<Output>* grads) {
    Graph* graph = scope_.graph();
    const int n = graph->num_nodes();  // the forward graph; gradient nodes come after
    // Nodes on a data path from an input to an output: the only ones gradients flow through.
    std::vector<bool> from_input(n, false), between(n, false);
    std::vector<const Node*> todo;
    for (const Output& in : inputs) todo.push_back(in.node);
    while (!todo.empty()) {
      const Node* node = todo.back();
      todo.pop_back();
      if (from_input[node->id()]) continue;
      from_input[node->id()] = true;
      for (const Edge* e : node->out_edges()) {
        if (!e->IsControl() && e->dst->id() < n) todo.push_back(e->dst);
      }
    }
    for (const Output& out : outputs) todo.push_back(out.node);
    while (!todo.empty()) {
      const Node* node = todo.back();
      todo.pop_back();
      if (between[node->id()] || !from_input[node->id()]) continue;
      between[node->id()] = true;
      for (int i = 0; i < node->num_inputs(); ++i) todo.push_back(node->input_edge(i)->src);
    }
    // A node is ready when every consumer between the inputs and outputs has sent its
    // gradients back.
    std::vector<int> pending(n, 0);
    for (int id = 0; id < n; ++id) {
      if (!between[id]) continue;
      const Node* node = graph->nodes()[id];
      for (int i = 0; i < node->num_inputs(); ++i) {
        const Node* src = node->input_edge(i)->src;
        if (between[src->id()]) ++pending[src->id()];
      }
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      Output seed = i < options_.grad_outputs.size() ? options_.grad_outputs[i] : Output();
      if (seed.node == nullptr) seed = ops::OnesLike(ScopeFor(*outputs[i].node, "seed"), outputs[i]);
      RETURN_IF_ERROR(scope_.status());
      if (between[outputs[i].node->id()]) sums_[{outputs[i].node, outputs[i].index}].push_back(seed);
    }

    std::deque<const Node*> ready;
    for (const Output& out : outputs) {
      if (between[out.node->id()] && pending[out.node->id()] == 0) {
        pending[out.node->id()] = -1;  // queued once
        ready.push_back(out.node);
      }
    }
    while (!ready.empty()) {
      const Node* node = ready.front();
      ready.pop_front();
      std::vector<Output> grad_inputs;
      bool any_input_between = false;
      for (int i = 0; i < node->num_inputs(); ++i) any_input_between |= between[node->input_edge(i)->src->id()];
      if (any_input_between) RETURN_IF_ERROR(Backprop(*node, &grad_inputs));
      for (int i = 0; any_input_between && i < node->num_inputs(); ++i) {
        const Edge* e = node->input_edge(i);
        if (!between[e->src->id()]) continue;
        if (i < static_cast<int>(grad_inputs.size()) && grad_inputs[i].node != nullptr) {
          sums_[{e->src, e->src_output}].push_back(grad_inputs[i]);
        }
        if (--pending[e->src->id()] == 0) {
          pending[e->src->id()] = -1;
          ready.push_back(e->src);
        }
      }
    }

    grads->clear();
    for (const Output& in : inputs) {
      Output g = SumOf({in.node, in.index});
      if (g.node == nullptr) g = ops::ZerosLike(ScopeFor(*in.node, "zeros"), in);
      grads->push_back(g);
    }
    return scope_.status();
  }

 private:
  // The scope a gradient op of `node` is built in: under gradients/<node>_grad, on the
  // node's device unless told otherwise.
  Scope ScopeFor(const Node& node, std::string_view what = "") const {
    Scope s = scope_.NewSubScope(StrCat(node.name(), "_grad", what.empty() ? "" : "/", what));
    if (options_.colocate_gradients_with_ops) s = s.ColocateWith(Operation(const_cast<Node*>(&node)));
    return s;
  }

  // The sum of the gradients that reached `slot`; empty if none did.
  Output SumOf(const Slot& slot) {
    auto it = sums_.find(slot);
    if (it == sums_.end() || it->second.empty()) return Output();
    std::vector<Output>& gs = it->second;
    if (gs.size() > 1) {
      std::vector<Input> in(gs.begin(), gs.end());
      gs = {ops::AddN(ScopeFor(*slot.first, "sum"), in)};
    }
    return gs[0];
  }

  Status Backprop(const Node& node, std::vector<Output>* grad_inputs) {
    const GradientFunction* fn = GradientRegistry::Global()->Find(node.op());
    if (fn == nullptr) {
      return errors::NotFound("No gradient defined for op: ", node.op(), " (node '", node.name(), "')");
    }
    std::vector<Output> grad_outputs;
    for (int j = 0; j < node.num_outputs(); ++j) {
      Output g = SumOf({&node, j});
      if (g.node == nullptr) g = ops::ZerosLike(ScopeFor(node, "zeros"), Output(const_cast<Node*>(&node), j));
      grad_outputs.push_back(g);
    }
    RETURN_IF_ERROR(scope_.status());
    Status s = (*fn)(ScopeFor(node), Operation(const_cast<Node*>(&node)), grad_outputs, grad_inputs);
    if (s.ok()) s = scope_.status();
    return s.WithSuffix(StrCat(" (in the gradient of ", node.DebugName(), ")"));
  }

  Scope scope_;
  const GradientOptions& options_;
  std::map<Slot, std::vector<Output>> sums_;
};

}  // namespace

GradientRegistry* GradientRegistry::Global() {
  static GradientRegistry* registry = [] {
    auto* r = new GradientRegistry;
    RegisterMathGradients(*r);
    RegisterArrayGradients(*r);
    RegisterNnGradients(*r);
    RegisterControlFlowGradients(*r);
    return r;
  }();
  return registry;
}

Status GradientRegistry::Register(const std::string& op, GradientFunction fn) {
  if (!fns_.emplace(op, std::move(fn)).second) {
    return errors::AlreadyExists("A gradient for op '", op, "' is already registered");
  }
  return Status::OK();
}

Output OpInput(const Operation& op, int i) {
  const Edge* e = op.node()->input_edge(i);
  return Output(e->src, e->src_output);
}

void RegisterCoreGradient(GradientRegistry& registry, const std::string& op, GradientFunction fn) {
  Status s = registry.Register(op, std::move(fn));
  if (!s.ok()) {
    std::cerr << "tessera: " << s << "\n";
    std::abort();
  }
}

const GradientFunction* GradientRegistry::Find(const std::string& op) const {
  auto it = fns_.find(op);
  return it == fns_.end() ? nullptr : &it->second;
}

Status AddSymbolicGradients(const Scope& scope, const std::vector<Output>& outputs,
                            const std::vector<Output>& inputs, std::vector<Output>* grads,
                            const GradientOptions& options) {
  RETURN_IF_ERROR(scope.status());
  for (const Output& o : outputs) {
    if (o.node == nullptr) return errors::InvalidArgument("AddSymbolicGradients got an empty output");
  }
  for (const Output& i : inputs) {
    if (i.node == nullptr) return errors::InvalidArgument("AddSymbolicGradients got an empty input");
  }
  if (!options.grad_outputs.empty() && options.grad_outputs.size() != outputs.size()) {
    return errors::InvalidArgument("grad_outputs has ", options.grad_outputs.size(), " entries for ", outputs.size(),
                                   " outputs");
  }
  return GradientBuilder(scope, options).Build(outputs, inputs, grads);
}

}  // namespace tessera
