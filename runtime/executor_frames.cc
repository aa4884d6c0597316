// Running a graph with TensorFlow 1.x's control flow, as TensorFlow's executor does.
//
// Every node runs in a frame (the step's root frame, or a loop's frame, one per iteration
// of the loop around it) and an iteration of that frame, and keeps its pending count, dead
// count and input slots per (frame, iteration). A value is dead when a Switch did not take
// its branch; a node with a dead input does not run, and its outputs are dead, except a
// Merge, which runs with the first live input (or is dead once all are). Enter moves values
// into a child frame (a constant Enter into every iteration), NextIteration into the next
// iteration, which starts when the loop has fewer than parallel_iterations in flight, and
// Exit back out; a dead NextIteration ends the loop, and dead Exits reach the parent frame
// when the loop's frame is done. An iteration is done when nothing in it is pending and the
// one before it is done; a frame, when every Enter arrived and every iteration is done.
//
// The frame bookkeeping is under one mutex per step; kernels run outside it.
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <new>
#include <tuple>

#include "graph/control_flow_frames.h"
#include "graph/op_kinds.h"
#include "runtime/executor_internal.h"

namespace tessera::executor_internal {
namespace {

// One iteration of a frame: state for that frame's nodes, by FlowItem::local_id.
struct IterationState {
  explicit IterationState(const FrameInfo& frame)
      : pending(frame.initial_pending),
        dead_count(frame.initial_pending.size(), 0),
        slots(new TensorValue[frame.num_slots]) {}
  std::vector<int> pending;  // a Merge's: 2 per control input not yet arrived, +1 until a live input arrives
  std::vector<int> dead_count;
  std::unique_ptr<TensorValue[]> slots;
  int outstanding_ops = 0;     // ready or running nodes of this iteration
  int outstanding_frames = 0;  // child frames started from this iteration and not done
};

struct Frame {
  uint64_t id = 0;  // 0: the root; see FrameAndIter
  const FrameInfo* info = nullptr;
  Frame* parent = nullptr;
  int64_t parent_iter = 0;
  int max_parallel = 1;
  int num_pending_inputs = 0;  // Enters not yet arrived
  int64_t iteration_count = 0;
  int num_outstanding_iterations = 1;
  std::map<int64_t, std::unique_ptr<IterationState>> iterations;
  // NextIteration values waiting for a free iteration (node, value).
  std::vector<std::pair<int, TensorValue>> next_iter_roots;
  // Constant Enters' values, given to every iteration (node, value; empty when dead).
  std::vector<std::pair<int, TensorValue>> loop_invariants;
  std::vector<int> dead_exits;  // of the current iteration

  IterationState* iteration(int64_t i) {
    auto it = iterations.find(i);
    return it == iterations.end() ? nullptr : it->second.get();
  }
};

struct Tagged {
  int id;
  Frame* frame;
  int64_t iter;
  IterationState* state;  // lives while this node is outstanding in it
  bool dead;
};

bool HasValue(const TensorValue& v) { return v.tensor.IsInitialized() || v.ref != nullptr; }

// FNV-1a over the parent's id, its iteration and the frame's name: the same child gets the
// same id on every device and in every process of the step, and never the root's 0.
uint64_t ChildFrameId(uint64_t parent, int64_t parent_iter, std::string_view name) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](const void* data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      h ^= static_cast<const unsigned char*>(data)[i];
      h *= 1099511628211ull;
    }
  };
  mix(&parent, sizeof parent);
  mix(&parent_iter, sizeof parent_iter);
  mix(name.data(), name.size());
  return h == 0 ? 1 : h;
}

class FramesState : public StepBase {
 public:
  FramesState(const Executor::Impl& impl, const Executor::Args& args, Executor::DoneCallback done)
      : StepBase(args, std::move(done)), impl_(impl) {
    root_.info = &impl.frames[0];
    root_.iterations.emplace(0, std::make_unique<IterationState>(*root_.info));
    if (args.stats != nullptr) args.stats->assign(impl.num_nodes(), NodeExecStats());
    WatchCancellation();
  }

  void Start() {
    std::vector<Tagged> stack;
    IterationState* root = root_.iteration(0);
    for (auto it = impl_.roots.rbegin(); it != impl_.roots.rend(); ++it) stack.push_back({*it, &root_, 0, root, false});
    root->outstanding_ops = static_cast<int>(stack.size());
    if (stack.empty()) {
      Finish();
      return;
    }
    outstanding_.store(static_cast<int64_t>(stack.size()) + 1, std::memory_order_relaxed);  // + this worker
    active_workers_.fetch_add(1, std::memory_order_relaxed);
    Process(std::move(stack), true);
  }

 private:
  // Runs nodes from `stack` until it is empty; the caller counted this worker as active.
  // A worker holds one count of outstanding_ while it runs (`held`: its caller took it), so
  // the step cannot end, and this state go, under it; the last count let go ends the step.
  // A spilled batch takes its own: its nodes, not yet completed, keep the step alive.
  void Process(std::vector<Tagged> stack, bool held) {
    if (!held) outstanding_.fetch_add(1, std::memory_order_relaxed);
    std::vector<TensorValue> outputs(impl_.max_outputs);
    while (!stack.empty()) {
      MaybeSpill(impl_, &stack, [](const Tagged& t) { return t.id; },
                 [this](std::vector<Tagged> batch) { Process(std::move(batch), false); });
      const Tagged t = stack.back();
      stack.pop_back();
      const NodeItem& item = impl_.item(t.id);
      const FlowItem& f = impl_.flow[t.id];
      TensorValue* inputs = t.state->slots.get() + item.input_start + f.slot_offset;
      const bool aborted = this->aborted();
      bool dead = t.dead || aborted;
      if (t.dead && f.is_retval) {
        RecordError(NodeError(item, errors::InvalidArgument("Retval[", item.node->name(), "] does not have value: ",
                                                            "the fetched tensor is on a branch that was not taken")));
      }
      if (!aborted && (!t.dead || f.is_recv) && item.is_async) {
        StartAsync(t, inputs, &stack);
        continue;
      }
      if (!aborted && (!t.dead || f.is_send) && !item.is_noop) {
        Status s = RunSyncKernel(impl_, args_, item, inputs, outputs.data(), f.is_switch, {t.frame->id, t.iter});
        if (!s.ok()) {
          RecordError(NodeError(item, s));
          dead = true;
        }
      } else if (!dead && args_.stats != nullptr) {
        RecordStats(args_, item, NowMicros());
      }
      for (int i = 0; i < item.num_inputs; ++i) inputs[i] = TensorValue();
      Complete(t, dead, outputs.data(), &stack);
    }
    active_workers_.fetch_sub(1, std::memory_order_relaxed);
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish();
  }

  // Starts async node `t`. When it finishes before ComputeAsync returns, it is completed here
  // into `stack` (finishing the step from inside the kernel's call would free this state
  // under the caller); otherwise its done callback completes it and goes on with what it
  // made ready.
  void StartAsync(const Tagged& t, TensorValue* inputs, std::vector<Tagged>* stack) {
    const NodeItem& item = impl_.item(t.id);
    enum Phase : int { kRunning, kReturned, kDoneEarly };
    struct AsyncCall {
      std::vector<TensorValue> outputs;
      std::unique_ptr<OpKernelContext> ctx;
      int64_t start = 0;
      Status status;
      std::atomic<int> phase{kRunning};
    };
    auto* call = new AsyncCall;
    call->outputs.resize(impl_.max_outputs);
    // Its outcome: the error recorded, the inputs released; true when it failed.
    auto settle = [this, t, call]() {
      const NodeItem& it = impl_.item(t.id);
      if (args_.stats != nullptr) RecordStats(args_, it, call->start);
      Status s = call->status;
      if (s.ok()) s = CheckOutputs(it, call->outputs.data(), impl_.flow[t.id].is_recv);
      if (!s.ok()) RecordError(NodeError(it, s));
      TensorValue* in = t.state->slots.get() + it.input_start + impl_.flow[t.id].slot_offset;
      for (int i = 0; i < it.num_inputs; ++i) in[i] = TensorValue();
      // A _Recv is dead when its trigger was or when what came was dead: to its control
      // successors too.
      return !s.ok() || t.dead || (impl_.flow[t.id].is_recv && !HasValue(call->outputs[0]));
    };
    call->status = PrepareInputs(impl_, item, inputs);
    if (call->status.ok()) {
      call->ctx = std::make_unique<OpKernelContext>(
          MakeParams(impl_, args_, item, inputs, call->outputs.data(), {t.frame->id, t.iter}));
      call->start = args_.stats != nullptr ? NowMicros() : 0;
      item.kernel->AsAsync()->ComputeAsync(call->ctx.get(), [this, t, call, settle] {
        call->status = call->ctx->status();
        if (call->phase.exchange(kDoneEarly) != kReturned) return;
        const bool failed = settle();
        std::vector<Tagged> ready;
        // The hold is taken while this node, not yet completed, keeps the step alive.
        active_workers_.fetch_add(1, std::memory_order_relaxed);
        outstanding_.fetch_add(1, std::memory_order_relaxed);
        Complete(t, failed, call->outputs.data(), &ready);
        delete call;
        Process(std::move(ready), true);
      });
      if (call->phase.exchange(kReturned) == kRunning) return;
    }
    const bool failed = settle();
    Complete(t, failed, call->outputs.data(), stack);
    delete call;
  }

  // Passes a finished node's outputs on by its kind; the step ends when the workers let go.
  void Complete(const Tagged& t, bool dead, TensorValue* outputs, std::vector<Tagged>* ready) {
    const size_t before = ready->size();
    {
      std::lock_guard<std::mutex> lock(mu_);
      const FlowItem& f = impl_.flow[t.id];
      Frame* frame = t.frame;
      if (f.is_enter) {
        Frame* child = FindOrCreateChild(frame, t.iter, f);
        if (f.is_constant_enter) {
          AddLoopInvariant(child, t.id, dead ? TensorValue() : outputs[0], ready);
        } else {
          Activate(child, 0, t.id, dead, outputs, ready);
        }
        --child->num_pending_inputs;
        // Every Enter arrived dead into an iteration with nothing left to run.
        if (child->num_pending_inputs == 0 && child->iteration(0)->outstanding_ops == 0 &&
            CleanupIterations(child, 0, ready)) {
          FrameDone(child, ready);
        }
      } else if (f.is_exit) {
        if (dead) {
          if (t.iter == frame->iteration_count) frame->dead_exits.push_back(t.id);
        } else {
          Activate(frame->parent, frame->parent_iter, t.id, false, outputs, ready);
        }
      } else if (f.is_next_iteration) {
        // A dead NextIteration ends the loop: nothing goes on to the next iteration.
        if (!dead) {
          if (t.iter == frame->iteration_count && frame->num_outstanding_iterations == frame->max_parallel) {
            frame->next_iter_roots.emplace_back(t.id, outputs[0]);
          } else {
            if (t.iter == frame->iteration_count) IncrementIteration(frame, ready);
            Activate(frame, t.iter + 1, t.id, false, outputs, ready);
          }
        }
      } else {
        Activate(frame, t.iter, t.id, dead, outputs, ready);
      }
      if (--t.state->outstanding_ops == 0 && CleanupIterations(frame, t.iter, ready)) FrameDone(frame, ready);
    }
    for (int i = 0; i < impl_.item(t.id).num_outputs; ++i) outputs[i] = TensorValue();
    const int64_t added = static_cast<int64_t>(ready->size() - before);
    outstanding_.fetch_add(added - 1, std::memory_order_acq_rel);
  }

  // Delivers node `src`'s outputs (deadness and values) to its successors in (frame, iter)
  // and queues those that became ready. Requires mu_.
  void Activate(Frame* frame, int64_t iter, int src, bool src_dead, const TensorValue* outputs,
                std::vector<Tagged>* ready) {
    IterationState* it = frame->iteration(iter);
    const NodeItem& item = impl_.item(src);
    const OutEdge* edges = item.out_edges();
    for (int e = 0; e < item.num_out_edges; ++e) {
      const OutEdge& edge = edges[e];
      const int dst = edge.dst;
      const FlowItem& df = impl_.flow[dst];
      const bool control = edge.dst_slot < 0;
      const bool edge_dead = src_dead || (!control && !HasValue(outputs[edge.src_output]));
      int& pending = it->pending[df.local_id];
      int& dead_count = it->dead_count[df.local_id];
      bool ready_now = false, dst_dead = false, take_input = false;
      if (df.is_merge) {
        const int num_data = impl_.item(dst).num_inputs;
        if (control) {
          pending -= 2;
          dst_dead = dead_count == num_data;
          ready_now = pending == 0 || (pending == 1 && dst_dead);
        } else if (edge_dead) {
          // A dead Enter kills its loop's Merge at once (the NextIteration input cannot
          // come), so that a loop in an untaken branch runs dead to its Exits, as in
          // TensorFlow: every device following the loop then hears of it.
          dst_dead = ++dead_count == num_data || impl_.flow[src].is_enter;
          ready_now = pending == 1 && dst_dead;
        } else if ((pending & 1) == 1) {  // the first live input; later ones are dropped
          take_input = true;
          ready_now = pending == 1;
          pending &= ~1;
        }
      } else {
        if (edge_dead) ++dead_count;
        take_input = !control && !edge_dead;
        ready_now = --pending == 0;
        dst_dead = dead_count > 0;
      }
      if (take_input) it->slots[edge.dst_slot + df.slot_offset] = outputs[edge.src_output];
      if (ready_now) {
        ++it->outstanding_ops;
        ready->push_back({dst, frame, iter, it, dst_dead && !df.is_control_trigger});
      }
    }
  }

  Frame* FindOrCreateChild(Frame* frame, int64_t iter, const FlowItem& f) {
    auto key = std::make_tuple(frame, iter, f.frame);
    auto found = children_.find(key);
    if (found != children_.end()) return found->second.get();
    auto child = std::make_unique<Frame>();
    child->info = &impl_.frames[f.frame];
    child->id = ChildFrameId(frame->id, iter, child->info->name);
    child->parent = frame;
    child->parent_iter = iter;
    child->max_parallel = f.parallel_iterations;
    child->num_pending_inputs = child->info->num_enters;
    child->iterations.emplace(0, std::make_unique<IterationState>(*child->info));
    frame->iteration(iter)->outstanding_frames++;
    Frame* raw = child.get();
    children_.emplace(key, std::move(child));
    frame_keys_.emplace(raw, key);
    return raw;
  }

  void AddLoopInvariant(Frame* frame, int id, TensorValue value, std::vector<Tagged>* ready) {
    frame->loop_invariants.emplace_back(id, value);
    for (auto& [i, state] : frame->iterations) Activate(frame, i, id, !HasValue(value), &value, ready);
  }

  void IncrementIteration(Frame* frame, std::vector<Tagged>* ready) {
    const int64_t next = ++frame->iteration_count;
    frame->iterations.emplace(next, std::make_unique<IterationState>(*frame->info));
    ++frame->num_outstanding_iterations;
    frame->dead_exits.clear();
    std::vector<std::pair<int, TensorValue>> roots = std::move(frame->next_iter_roots);
    frame->next_iter_roots.clear();
    for (auto& [id, value] : roots) Activate(frame, next, id, false, &value, ready);
    for (auto& [id, value] : frame->loop_invariants) Activate(frame, next, id, !HasValue(value), &value, ready);
  }

  bool IsIterationDone(Frame* frame, int64_t iter) {
    IterationState* it = frame->iteration(iter);
    if (it == nullptr || it->outstanding_ops != 0 || it->outstanding_frames != 0) return false;
    return iter == 0 ? frame->num_pending_inputs == 0 : frame->iteration(iter - 1) == nullptr;
  }

  // Drops the done iterations from `iter` on, starting deferred ones; true when the frame
  // is done.
  bool CleanupIterations(Frame* frame, int64_t iter, std::vector<Tagged>* ready) {
    for (int64_t i = iter; i <= frame->iteration_count && IsIterationDone(frame, i); ++i) {
      frame->iterations.erase(i);
      --frame->num_outstanding_iterations;
      if (!frame->next_iter_roots.empty()) IncrementIteration(frame, ready);
    }
    return frame != &root_ && frame->num_pending_inputs == 0 && frame->num_outstanding_iterations == 0;
  }

  // A loop's frame is done: its dead Exits reach the parent, which may be done in turn.
  void FrameDone(Frame* frame, std::vector<Tagged>* ready) {
    while (frame != nullptr) {
      Frame* parent = frame->parent;
      const int64_t parent_iter = frame->parent_iter;
      for (int id : frame->dead_exits) Activate(parent, parent_iter, id, true, nullptr, ready);
      auto key = frame_keys_.find(frame);
      children_.erase(key->second);
      frame_keys_.erase(key);
      IterationState* it = parent->iteration(parent_iter);
      --it->outstanding_frames;
      frame = it->outstanding_ops == 0 && CleanupIterations(parent, parent_iter, ready) ? parent : nullptr;
    }
  }

  const Executor::Impl& impl_;
  std::atomic<int64_t> outstanding_{0};  // ready or running nodes, in every frame
  std::mutex mu_;  // guards the frames below
  Frame root_;
  std::map<std::tuple<Frame*, int64_t, int>, std::unique_ptr<Frame>> children_;
  std::map<Frame*, std::tuple<Frame*, int64_t, int>> frame_keys_;
};

}  // namespace

namespace {

// Each node's role, and each Enter's frame (frames[0] is the root). `any`: the graph has
// control flow, or a _Recv that may bring a dead value (the partitioner marks those).
Status ClassifyNodes(const Graph& graph, Executor::Impl* impl, bool* any) {
  std::map<std::string, int, std::less<>> frame_index;
  impl->flow.assign(graph.nodes().size(), FlowItem());
  impl->frames.assign(1, FrameInfo());
  *any = false;
  for (const Node* n : graph.nodes()) {
    FlowItem& f = impl->flow[n->id()];
    const std::string& op = n->op();
    f.is_send = IsSend(op);
    f.is_recv = IsRecv(op);
    f.is_merge = IsMerge(op);
    f.is_switch = IsSwitch(op);
    f.is_enter = IsEnter(op);
    f.is_exit = IsExit(op);
    f.is_next_iteration = IsNextIteration(op);
    f.is_control_trigger = IsControlTrigger(op);
    f.is_retval = IsRetval(op);
    bool maybe_dead = false;
    *any = *any || IsControlFlow(op) ||
           (f.is_recv && n->GetAttr(kMaybeDeadAttr, &maybe_dead).ok() && maybe_dead);
    if (!f.is_enter) continue;
    std::string name;
    int64_t parallel = 10;
    RETURN_IF_ERROR(n->GetAttr("frame_name", &name));
    RETURN_IF_ERROR(n->GetAttr("is_constant", &f.is_constant_enter));
    RETURN_IF_ERROR(n->GetAttr("parallel_iterations", &parallel));
    if (parallel < 1 || parallel > (1 << 20)) {
      return errors::InvalidArgument("Node ", n->DebugName(), ": parallel_iterations must be in [1, 2^20], got ",
                                     parallel);
    }
    f.parallel_iterations = static_cast<int>(parallel);
    auto [it, inserted] = frame_index.try_emplace(name, static_cast<int>(impl->frames.size()));
    if (inserted) impl->frames.push_back({name, 0, 0, {}});
    f.frame = it->second;
    ++impl->frames[f.frame].num_enters;
  }
  return Status::OK();
}

// Gives each node its place in the static frame its inputs arrive in
// (graph/control_flow_frames.h). Nodes no root reaches never run; they stay in the root.
Status AssignFrames(const Graph& graph, Executor::Impl* impl) {
  ASSIGN_OR_RETURN(ControlFlowFrames found, FindControlFlowFrames(graph));
  std::map<std::string_view, int> index;  // ClassifyNodes numbered the frames by their Enters
  for (size_t i = 0; i < impl->frames.size(); ++i) index.emplace(impl->frames[i].name, static_cast<int>(i));
  for (const Node* n : graph.nodes()) {
    FlowItem& f = impl->flow[n->id()];
    const std::string& frame_name = found.input_frame[n->id()];
    if (f.is_retval && !frame_name.empty()) {
      // TensorFlow refuses this when the graph is built: a tensor of a loop's body has a
      // value per iteration, and none once the loop ends.
      const Edge* in = n->num_inputs() > 0 ? n->input_edge(0) : nullptr;
      return errors::InvalidArgument("Cannot fetch '", in != nullptr ? in->src->name() : n->name(),
                                     "': it is inside the while loop of frame '", frame_name,
                                     "', where it has a value per iteration; fetch what the loop gives out (an Exit) "
                                     "instead");
    }
    FrameInfo& frame = impl->frames[index.at(frame_name)];
    const NodeItem& item = impl->item(n->id());
    const int num_control = static_cast<int>(n->control_inputs().size());
    f.local_id = static_cast<int>(frame.initial_pending.size());
    f.slot_offset = frame.num_slots - item.input_start;
    frame.num_slots += item.num_inputs;
    frame.initial_pending.push_back(f.is_merge ? (num_control << 1) | 1 : item.num_inputs + num_control);
  }
  return Status::OK();
}

}  // namespace

Status AnalyzeControlFlow(const Graph& graph, Executor::Impl* impl) {
  bool any = false;
  RETURN_IF_ERROR(ClassifyNodes(graph, impl, &any));
  if (!any) {
    impl->flow.clear();
    impl->frames.clear();
    return Status::OK();
  }
  return AssignFrames(graph, impl);
}

void RunWithFrames(const Executor::Impl& impl, const Executor::Args& args, Executor::DoneCallback done) {
  (new FramesState(impl, args, std::move(done)))->Start();
}

}  // namespace tessera::executor_internal
