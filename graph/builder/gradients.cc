#include "graph/builder/gradients.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <optional>
#include <set>

#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"
#include "graph/control_flow_frames.h"
#include "graph/op_kinds.h"

namespace tessera {
namespace {

using Slot = std::pair<const Node*, int>;  // one output of a node

bool Differentiable(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kHalf || t == DataType::kBFloat16;
}

Output InputOf(const Node& n, int i) { return Output(n.input_edge(i)->src, n.input_edge(i)->src_output); }

bool IsLoopMerge(const Node& n) {
  if (!IsMerge(n.op())) return false;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (IsEnter(n.input_edge(i)->src->op()) || IsNextIteration(n.input_edge(i)->src->op())) return true;
  }
  return false;
}

// A TensorFlow 1.x while loop of the forward graph, as tf.while_loop wires it: per loop
// variable Enter -> Merge (with the body's NextIteration) -> Switch on the LoopCond -> Exit
// and, by output 1, the body; tensors from outside enter as constant Enters.
struct ForwardLoop {
  struct Var {
    Node* enter;
    Node* merge;
    Node* sw;
    Node* exit;       // null where nothing leaves the loop
    Output body_out;  // what the NextIteration sends round
  };
  std::string frame;
  int parallel_iterations = 10;
  Node* loop_cond = nullptr;
  std::vector<Var> vars;
  std::vector<Node*> invariants;
};

// A cond branch that a value of a loop body is made in: the Switch's predicate and output.
struct CondBranch {
  const Node* sw;
  Output pred;
  int port;
};

// A while loop's gradient loop while it is built (TensorFlow's GradLoopState): its frame, the
// per-iteration nodes of both loops, and the forward values it has taken in.
struct BackwardFrame {
  BackwardFrame* parent;  // the gradient loop this one runs in; null at the top
  const ForwardLoop* loop;
  std::string name;
  Scope scope;            // for plumbing: no capture, no control dependencies
  Output pivot;           // the backward loop's count in this iteration
  Output forward_pivot;   // the forward loop's count in this iteration
  std::map<Slot, Output> captured;
  std::vector<Operation> pushes, pops;
};

// The forward graph's loops, found once per AddSymbolicGradients call and shared by the
// builders of every loop nest level.
class ForwardLoops {
 public:
  explicit ForwardLoops(const Graph& graph)
      : graph_(graph),
        forward_nodes_(graph.num_nodes()),
        has_loops_(std::any_of(graph.nodes().begin(), graph.nodes().end(),
                               [](const Node* n) { return IsEnter(n->op()); })) {}

  int forward_nodes() const { return forward_nodes_; }

  // Whether `n` is made inside a loop; false without looking for frames in a graph without
  // loops.
  StatusOr<bool> InLoop(const Node& n) {
    if (!has_loops_) return false;
    RETURN_IF_ERROR(FindFrames());
    return !frames_->output_frame[n.id()].empty();
  }

  StatusOr<const ForwardLoop*> Of(const std::string& frame) {
    RETURN_IF_ERROR(FindFrames());
    auto it = loops_.find(frame);
    if (it != loops_.end()) return &it->second;
    ForwardLoop loop;
    loop.frame = frame;
    for (int id = 0; id < forward_nodes_; ++id) {
      Node* n = graph_.nodes()[id];
      // A gradient loop: its own gradient would need the forward loop's stacks pushed again.
      if (n->op() == "StackPopV2" && frames_->input_frame[id] == frame) {
        return errors::Unimplemented("Second-order gradients of a tf.while_loop are not supported by Tessera (",
                                     n->DebugName(), " is in a loop's gradient)");
      }
      if (!IsEnter(n->op()) || frames_->output_frame[id] != frame) continue;
      bool is_constant = false;
      RETURN_IF_ERROR(n->GetAttr("is_constant", &is_constant));
      RETURN_IF_ERROR(n->GetAttr("parallel_iterations", &loop.parallel_iterations));
      if (is_constant) {
        loop.invariants.push_back(n);
        continue;
      }
      ForwardLoop::Var var{n, Consumer(*n, 0, IsMerge), nullptr, nullptr, {}};
      if (var.merge != nullptr) var.sw = Consumer(*var.merge, 0, IsSwitch);
      if (var.sw == nullptr || !IsLoopSwitch(*var.sw) || var.merge->num_inputs() != 2 ||
          !IsNextIteration(var.merge->input_edge(1)->src->op())) {
        return errors::Unimplemented("No gradient for the while loop of ", n->DebugName(),
                                     ": it is not wired as tf.while_loop wires its loop variables");
      }
      var.exit = Consumer(*var.sw, 0, IsExit);
      var.body_out = InputOf(*var.merge->input_edge(1)->src, 0);
      loop.loop_cond = var.sw->input_edge(1)->src;
      loop.vars.push_back(var);
    }
    if (loop.vars.empty()) return errors::Internal("Frame '", frame, "' has no loop variables");
    // A gradient reaching an Exit the loop's variables do not account for would be lost.
    for (int id = 0; id < forward_nodes_; ++id) {
      const Node* n = graph_.nodes()[id];
      if (!IsExit(n->op()) || frames_->input_frame[id] != frame) continue;
      if (std::none_of(loop.vars.begin(), loop.vars.end(), [n](const ForwardLoop::Var& v) { return v.exit == n; })) {
        return errors::Unimplemented("No gradient for the while loop of ", n->DebugName(),
                                     ": it is not the one Exit of a loop variable's Switch");
      }
    }
    return &loops_.emplace(frame, std::move(loop)).first->second;
  }

  // The frame of the loop an Exit leaves.
  StatusOr<std::string> FrameLeftBy(const Node& exit) {
    RETURN_IF_ERROR(FindFrames());
    return frames_->input_frame[exit.id()];
  }
  StatusOr<std::string> ParentOf(const std::string& frame) {
    RETURN_IF_ERROR(FindFrames());
    auto it = frames_->parent.find(frame);
    if (it == frames_->parent.end()) return errors::Internal("No frame '", frame, "' in the graph");
    return it->second;
  }

  // The forward frame a value is made in; nullopt for a value of the gradient. For the
  // values of a loop whose frame Of(), FrameLeftBy() or InLoop() has looked at.
  std::optional<std::string> FrameOf(const Node& n) const {
    if (n.id() < forward_nodes_) return frames_->output_frame[n.id()];
    auto it = added_.find(n.id());
    if (it == added_.end()) return std::nullopt;
    return it->second;
  }
  // Records a node the gradient adds to the forward graph, in `frame`.
  void AddedTo(const Output& o, const std::string& frame) {
    if (o.node != nullptr) added_[o.node->id()] = frame;
  }
  // Records that an added node runs in the cond branch `like` runs in.
  void InBranchOf(const Output& n, const Output& like) {
    if (n.node != nullptr) branches_[{n.node, -1}] = BranchOf(like);
  }

  // A frame name no loop of the graph has yet.
  std::string NewFrameName(const std::string& base) {
    std::string name = base;
    for (int i = 1; frames_->parent.count(name) != 0 || taken_.count(name) != 0; ++i) name = StrCat(base, "_", i);
    taken_.insert(name);
    return name;
  }

  // The innermost cond branch, inside its loop, that makes `o`; null outside every cond.
  const CondBranch* BranchOf(const Output& o) {
    const Node& n = *o.node;
    if (!IsSwitch(n.op()) || IsLoopSwitch(n)) return BranchOf(n);
    auto [it, fresh] = branches_.try_emplace({&n, o.index});
    if (fresh) it->second = &branch_store_.emplace_back(CondBranch{&n, InputOf(n, 1), o.index});
    return it->second;
  }

 private:
  Status FindFrames() {
    if (frames_) return Status::OK();
    ASSIGN_OR_RETURN(ControlFlowFrames frames, FindControlFlowFrames(graph_));
    frames_ = std::move(frames);
    return Status::OK();
  }

  static Node* Consumer(const Node& n, int port, bool (*kind)(std::string_view)) {
    for (const Edge* e : n.out_edges()) {
      if (!e->IsControl() && e->src_output == port && kind(e->dst->op())) return e->dst;
    }
    return nullptr;
  }

  // The branch a node runs in: its first input's, but for the ops that open and close
  // frames and conds.
  const CondBranch* BranchOf(const Node& n) {
    auto [it, fresh] = branches_.try_emplace({&n, -1});
    if (!fresh) return it->second;
    const CondBranch* branch = nullptr;
    if (IsEnter(n.op()) || IsLoopSwitch(n) || IsLoopMerge(n)) {
      branch = nullptr;
    } else if (IsExit(n.op())) {  // the branch its loop runs in: its Enters', through its Switch and Merge
      const Node* sw = n.num_inputs() == 1 ? n.input_edge(0)->src : nullptr;
      const Node* merge = sw != nullptr && sw->num_inputs() > 0 ? sw->input_edge(0)->src : nullptr;
      const Node* enter = merge != nullptr && merge->num_inputs() > 0 ? merge->input_edge(0)->src : nullptr;
      branch = enter != nullptr && IsEnter(enter->op()) && enter->num_inputs() == 1 ? BranchOf(InputOf(*enter, 0))
                                                                                   : nullptr;
    } else if (IsMerge(n.op())) {  // a cond's Merge is in the branch its Switches are in
      const CondBranch* inner = n.num_inputs() > 0 ? BranchOf(InputOf(n, 0)) : nullptr;
      branch = inner == nullptr ? nullptr : BranchOf(*inner->sw);
    } else if (n.num_inputs() > 0) {
      branch = BranchOf(InputOf(n, 0));
    } else {
      // An op without inputs waits on its branch's pivot, maybe among other control inputs.
      for (const Edge* c : n.control_inputs()) {
        if ((branch = BranchOf(*c->src)) != nullptr) break;
      }
    }
    branches_[{&n, -1}] = branch;
    return branch;
  }

  const Graph& graph_;
  const int forward_nodes_;
  const bool has_loops_;
  std::optional<ControlFlowFrames> frames_;
  std::map<std::string, ForwardLoop> loops_;
  std::map<int, std::string> added_;
  std::set<std::string> taken_;
  std::map<Slot, const CondBranch*> branches_;
  std::deque<CondBranch> branch_store_;
};

// The gradient graph of one AddSymbolicGradients call, or of one loop body in it.
class GradientBuilder {
 public:
  // `scope` is the "gradients" scope, with the capture of `frame`'s body where that is set.
  GradientBuilder(const Scope& scope, const GradientOptions& options, ForwardLoops& loops,
                  BackwardFrame* frame = nullptr)
      : scope_(scope), options_(options), loops_(loops), frame_(frame) {}

  // Leaves an empty Output for an input no gradient reaches. Gradients stop at `stop`: they
  // flow neither into nor through those nodes.
  Status Build(const std::vector<Output>& outputs, const std::vector<Output>& inputs, std::vector<Output>* grads,
               const std::set<const Node*>& stop = {}) {
    Graph* graph = scope_.graph();
    const int n = graph->num_nodes();  // gradient nodes come after
    // Nodes on a data path from an input to an output: the only ones gradients flow through.
    // A loop is one step of such a path, from its Enters to its Exits.
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
      if (stop.count(node) != 0) continue;
      ASSIGN_OR_RETURN(std::vector<const Node*> sources, SourcesOf(*node));
      todo.insert(todo.end(), sources.begin(), sources.end());
    }
    // A node is ready when every consumer between the inputs and outputs has sent its
    // gradients back.
    std::vector<int> pending(n, 0);
    std::vector<std::vector<const Node*>> sources(n);
    for (int id = 0; id < n; ++id) {
      if (!between[id] || stop.count(graph->nodes()[id]) != 0) continue;
      ASSIGN_OR_RETURN(sources[id], SourcesOf(*graph->nodes()[id]));
      std::erase_if(sources[id], [&](const Node* src) { return !between[src->id()]; });
      for (const Node* src : sources[id]) ++pending[src->id()];
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
      if (stop.count(node) != 0) continue;
      if (IsEnter(node->op())) {
        // Every Exit of its loop has its gradient now: the gradient loop gives the Enters'.
        RETURN_IF_ERROR(BuildLoopGradient(*loops_.FrameOf(*node)));
        Output g = SumOf({node, 0});
        if (g.node != nullptr) sums_[{node->input_edge(0)->src, node->input_edge(0)->src_output}].push_back(g);
      } else if (!IsExit(node->op()) && !sources[node->id()].empty()) {
        std::vector<Output> grad_inputs;
        RETURN_IF_ERROR(Backprop(*node, &grad_inputs));
        for (int i = 0; i < node->num_inputs() && i < static_cast<int>(grad_inputs.size()); ++i) {
          const Edge* e = node->input_edge(i);
          if (between[e->src->id()] && grad_inputs[i].node != nullptr) {
            sums_[{e->src, e->src_output}].push_back(grad_inputs[i]);
          }
        }
      }
      for (const Node* src : sources[node->id()]) {
        if (--pending[src->id()] == 0) {
          pending[src->id()] = -1;
          ready.push_back(src);
        }
      }
    }

    grads->clear();
    for (const Output& in : inputs) grads->push_back(SumOf({in.node, in.index}));
    return scope_.status();
  }

 private:
  // What a node's gradient flows to: its data inputs; for a loop's Exit, the loop's Enters,
  // whose gradients the gradient loop gives once every Exit has its own.
  StatusOr<std::vector<const Node*>> SourcesOf(const Node& node) {
    std::vector<const Node*> sources;
    if (IsExit(node.op()) && node.id() < loops_.forward_nodes()) {
      ASSIGN_OR_RETURN(std::string frame, loops_.FrameLeftBy(node));
      ASSIGN_OR_RETURN(const ForwardLoop* loop, loops_.Of(frame));
      for (const ForwardLoop::Var& v : loop->vars) sources.push_back(v.enter);
      sources.insert(sources.end(), loop->invariants.begin(), loop->invariants.end());
      return sources;
    }
    for (int i = 0; i < node.num_inputs(); ++i) sources.push_back(node.input_edge(i)->src);
    return sources;
  }

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

  // The gradient of a forward loop, as TensorFlow 1.x builds it: a loop in a frame of its own
  // that runs the body's gradient once per forward iteration, last iteration first. The
  // forward loop counts its iterations and saves on stacks the values the body's gradient
  // reads; the gradient loop counts down and pops them. Loop variables' gradients go round
  // the gradient loop; tensors from outside get theirs summed over the iterations.
  Status BuildLoopGradient(const std::string& frame) {
    if (!built_.insert(frame).second) return Status::OK();
    ASSIGN_OR_RETURN(const ForwardLoop* loop, loops_.Of(frame));
    ASSIGN_OR_RETURN(std::string parent, loops_.ParentOf(frame));
    auto exiting = std::find_if(loop->vars.begin(), loop->vars.end(), [](const auto& v) { return v.exit; });
    // In the frame the loop is in, with its capture.
    const Scope outer = ScopeFor(exiting != loop->vars.end() ? *exiting->exit : *loop->vars[0].enter);
    const Scope plain = outer.WithFrameCapture(nullptr).WithNoControlDependencies();
    const Scope counting = plain.ColocateWith(Operation(loop->loop_cond));
    const int pi = loop->parallel_iterations;
    auto enter = [&](const Scope& s, Input v, const std::string& name, bool is_constant) {
      return ops::Build(s, "Enter", {v}, {{"frame_name", name}, {"is_constant", is_constant},
                                          {"parallel_iterations", static_cast<int64_t>(pi)}});
    };

    // The gradients reaching the loop's results.
    std::vector<const ForwardLoop::Var*> vars;
    std::vector<Output> seeds;
    // Every differentiable variable goes round: one without an Exit still carries gradients
    // from one iteration's body to the last's.
    for (const ForwardLoop::Var& v : loop->vars) {
      if (!Differentiable(v.merge->output_type(0))) continue;
      Output g = v.exit != nullptr ? SumOf({v.exit, 0}) : Output();
      if (g.node == nullptr) g = ops::ZerosLike(outer, v.exit != nullptr ? Output(v.exit, 0) : InputOf(*v.enter, 0));
      vars.push_back(&v);
      seeds.push_back(g);
    }

    // The forward loop's iteration count.
    // In a loop in a loop, each run of this loop starts once the run before it has pushed
    // all it saves (the outer loop's count waits for that), and the gradient loop's outer
    // iteration ends once this one's gradient loop has popped all: stacks stay in order.
    Output zero = ops::Const(scope_.WithFrameCapture(nullptr).WithNoControlDependencies(), Tensor::Scalar(0));
    if (!parent.empty()) {
      zero = ops::Identity(counting.WithControlDependencies({frame_->forward_pivot.op()}), EnterForward(zero, parent));
    }
    const Output f_enter = enter(counting.WithOpName("f_count"), zero, frame, false);
    const Output f_merge = ops::Build(counting, "Merge", {f_enter, f_enter});
    const std::vector<Output> f_switch = ops::AllOutputs(ops::Build(counting, "Switch", {f_merge, Output(loop->loop_cond)}));
    RETURN_IF_ERROR(scope_.status());
    const Output f_exit = ops::Build(counting, "Exit", {f_switch[0]});
    loops_.AddedTo(f_exit, parent);
    // The count leaves the loop where the loop runs: in a cond branch, only when it is taken.
    loops_.InBranchOf(f_exit, InputOf(*loop->vars[0].enter, 0));

    BackwardFrame bf{frame_, loop, loops_.NewFrameName(frame + "/gradients"), plain, {}, {}, {}, {}, {}};
    bf.forward_pivot = ops::Identity(counting, f_switch[1]);

    // The gradient loop's count, down from the forward loop's.
    const Output b_enter = enter(outer.WithOpName("b_count").ColocateWith(Operation(loop->loop_cond)), f_exit,
                                 bf.name, false);
    const Output b_merge = ops::Build(counting, "Merge", {b_enter, b_enter});
    const Output b_cond = ops::Greater(counting.WithControlDependencies({b_merge.op()}), b_merge, 0);
    const Output b_loop_cond = ops::Build(counting, "LoopCond", {b_cond});
    const std::vector<Output> b_switch = ops::AllOutputs(ops::Build(counting, "Switch", {b_merge, b_loop_cond}));
    RETURN_IF_ERROR(scope_.status());
    bf.pivot = ops::Identity(counting, b_switch[1]);
    if (frame_ != nullptr) frame_->pops.push_back(ops::Build(counting, "Exit", {b_switch[0]}).op());

    // A loop variable of the gradient loop per differentiable loop variable.
    struct Carried {
      Output merge, body, exit;
    };
    auto carry = [&](Output initial) {
      Output merge = ops::Build(plain, "Merge", {initial, initial});
      std::vector<Output> sw = ops::AllOutputs(ops::Build(plain, "Switch", {merge, b_loop_cond}));
      if (sw.empty()) return Carried{};
      return Carried{merge, ops::Identity(plain, sw[1]), ops::Build(plain, "Exit", {sw[0]})};
    };
    std::vector<Carried> carried;
    for (const Output& seed : seeds) carried.push_back(carry(enter(outer, seed, bf.name, false)));
    RETURN_IF_ERROR(scope_.status());

    // The body's gradient, in the gradient loop's frame.
    auto capture = std::make_shared<FrameCapture>();
    capture->capture = [this, &bf](const Output& o) { return Capture(bf, o); };
    capture->pivot = bf.pivot.op();
    std::vector<Output> body_outs, body_ins, body_grads, body_seeds;
    std::set<const Node*> stop;
    for (const ForwardLoop::Var& v : loop->vars) stop.insert({v.enter, v.merge, v.sw});
    stop.insert(loop->invariants.begin(), loop->invariants.end());
    for (size_t k = 0; k < vars.size(); ++k) {
      body_outs.push_back(vars[k]->body_out);
      body_seeds.push_back(carried[k].body);
      body_ins.emplace_back(vars[k]->sw, 1);
    }
    std::vector<Node*> invariants;
    for (Node* inv : loop->invariants) {
      if (!Differentiable(inv->output_type(0))) continue;
      invariants.push_back(inv);
      body_ins.emplace_back(inv, 0);
    }
    GradientOptions body_options = options_;
    body_options.grad_outputs = body_seeds;
    GradientBuilder body(scope_.WithFrameCapture(capture).WithNoControlDependencies(), body_options, loops_, &bf);
    RETURN_IF_ERROR(body.Build(body_outs, body_ins, &body_grads, stop));

    Graph* graph = scope_.graph();
    for (size_t k = 0; k < vars.size(); ++k) {
      Output g = body_grads[k].node != nullptr ? body_grads[k] : ops::ZerosLike(plain, carried[k].body);
      Output next = ops::Build(plain, "NextIteration", {g});
      RETURN_IF_ERROR(scope_.status());
      RETURN_IF_ERROR(graph->ConnectBackEdge(carried[k].merge.node, 1, next.node, 0));
      sums_[{vars[k]->enter, 0}].push_back(carried[k].exit);
    }
    // An outside tensor's gradient: the sum over the iterations.
    for (size_t j = 0; j < invariants.size(); ++j) {
      const Output& g = body_grads[vars.size() + j];
      if (g.node == nullptr) continue;
      Carried sum = carry(enter(outer, ops::ZerosLike(outer, InputOf(*invariants[j], 0)), bf.name, false));
      Output next = ops::Build(plain, "NextIteration", {ops::Add(plain, sum.body, g)});
      RETURN_IF_ERROR(scope_.status());
      RETURN_IF_ERROR(graph->ConnectBackEdge(sum.merge.node, 1, next.node, 0));
      sums_[{invariants[j], 0}].push_back(sum.exit);
    }

    // Each count goes on once its iteration's stack operations are done: pushes stay in
    // iteration order, and pops with them. A ControlTrigger waits also for a push or pop a
    // cond branch not taken left dead.
    auto after = [&](const std::vector<Operation>& ops, const Output& count, const Output& merge, int by) -> Status {
      std::vector<Operation> deps{count.op()};
      if (!ops.empty()) deps.push_back(ops::Build(counting.WithControlDependencies(ops), "ControlTrigger", {}).op());
      const Output step = ops::Add(counting, count, ops::Const(counting.WithControlDependencies(deps), Tensor::Scalar(by)));
      const Output next = ops::Build(counting, "NextIteration", {step});
      RETURN_IF_ERROR(scope_.status());
      return graph->ConnectBackEdge(merge.node, 1, next.node, 0);
    };
    RETURN_IF_ERROR(after(bf.pushes, bf.forward_pivot, f_merge, 1));
    RETURN_IF_ERROR(after(bf.pops, bf.pivot, b_merge, -1));
    return scope_.status();
  }

  // `o` as the gradient loop of `bf` reads it: a gradient value as it is; the forward loop's
  // value of the same iteration from its stack; a tensor from outside the loop entered.
  Output Capture(BackwardFrame& bf, const Output& o) {
    const std::optional<std::string> frame = loops_.FrameOf(*o.node);
    if (!frame) return o;
    auto it = bf.captured.find({o.node, o.index});
    if (it != bf.captured.end()) return it->second;
    auto outside = [&](const Output& v) {
      const Output parent = bf.parent == nullptr ? v : Capture(*bf.parent, v);
      return ops::Build(bf.scope.ColocateWith(v), "Enter", {parent},
                        {{"frame_name", bf.name}, {"is_constant", true},
                         {"parallel_iterations", static_cast<int64_t>(bf.loop->parallel_iterations)}});
    };
    Output captured;
    bool is_constant = false;
    if (*frame != bf.loop->frame) {
      captured = outside(o);
    } else if (IsEnter(o.node->op()) && o.node->GetAttr("is_constant", &is_constant).ok() && is_constant) {
      captured = outside(InputOf(*o.node, 0));
    } else {
      captured = Saved(bf, o);
    }
    bf.captured[{o.node, o.index}] = captured;
    return captured;
  }

  // A forward loop's value pushed on a stack in each iteration, popped in the gradient
  // loop's. In a cond branch, the push happens where the branch runs, and the pop where
  // the same predicate, popped too, says it ran.
  Output Saved(BackwardFrame& bf, const Output& o) {
    const DataType type = o.type();
    const Scope at_value = bf.scope.ColocateWith(o);
    const Scope root = scope_.WithFrameCapture(nullptr).WithNoControlDependencies().ColocateWith(o);
    const Output stack = ops::Build(root, "StackV2", {-1},
                                    {{"elem_type", type}, {"stack_name", o.name()}});
    loops_.AddedTo(stack, "");
    const Output push = ops::Build(at_value.WithControlDependencies({bf.forward_pivot.op()}), "StackPushV2",
                                   {EnterForward(stack, bf.loop->frame), o});
    bf.pushes.push_back(push.op());
    Output handle = Capture(bf, stack);
    if (const CondBranch* branch = loops_.BranchOf(o)) {
      std::vector<Output> sw = ops::AllOutputs(ops::Build(at_value, "Switch", {handle, Capture(bf, branch->pred)}));
      if (sw.empty()) return Output();
      handle = sw[branch->port];
    }
    const Output pop = ops::Build(at_value.WithControlDependencies({bf.pivot.op()}), "StackPopV2", {handle},
                                  {{"elem_type", type}});
    if (pop.node == nullptr) return pop;
    bf.pops.push_back(pop.op());
    scope_.UpdateStatus(scope_.graph()->RefineOutputShape(pop.node, 0, o.node->output_shape(o.index)));
    return pop;
  }

  // A value of the root frame entered into forward frame `frame`, through the frames it is in.
  Output EnterForward(Output v, const std::string& frame) {
    StatusOr<std::string> parent = loops_.ParentOf(frame);
    StatusOr<const ForwardLoop*> loop = loops_.Of(frame);
    if (!parent.ok() || !loop.ok()) {
      scope_.UpdateStatus(parent.ok() ? loop.status() : parent.status());
      return Output();
    }
    if (!parent->empty()) v = EnterForward(v, *parent);
    return ops::Build(scope_.WithFrameCapture(nullptr).WithNoControlDependencies().ColocateWith(v), "Enter", {v},
                      {{"frame_name", frame}, {"is_constant", true},
                       {"parallel_iterations", static_cast<int64_t>((*loop)->parallel_iterations)}});
  }

  Scope scope_;
  const GradientOptions& options_;
  ForwardLoops& loops_;
  BackwardFrame* frame_;
  std::map<Slot, std::vector<Output>> sums_;
  std::set<std::string> built_;
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
  ForwardLoops loops(*scope.graph());
  // A loop's gradient is made for the loop as a whole, from its Exits to its Enters.
  for (const std::vector<Output>* ends : {&outputs, &inputs}) {
    for (const Output& o : *ends) {
      ASSIGN_OR_RETURN(bool in_loop, loops.InLoop(*o.node));
      if (in_loop) {
        return errors::Unimplemented("Gradients from or to a tensor inside a tf.while_loop's body are not supported "
                                     "by Tessera (node ", o.node->DebugName(), ")");
      }
    }
  }
  const Scope gradients = scope.NewSubScope("gradients");
  RETURN_IF_ERROR(GradientBuilder(gradients, options, loops).Build(outputs, inputs, grads));
  for (size_t i = 0; i < inputs.size() && options.zeros_for_unreached; ++i) {
    if ((*grads)[i].node != nullptr) continue;
    Scope zeros = gradients.NewSubScope(StrCat(inputs[i].node->name(), "_grad/zeros"));
    if (options.colocate_gradients_with_ops) zeros = zeros.ColocateWith(inputs[i].op());
    (*grads)[i] = ops::ZerosLike(zeros, inputs[i]);
  }
  return gradients.status();
}

}  // namespace tessera
