#include "runtime/executor.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>

#include "graph/op_kinds.h"
#include "kernels/resources/variable.h"
#include "runtime/executor_internal.h"

namespace tessera {
namespace executor_internal {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t OsThreadId() {
  thread_local int64_t tid = static_cast<int64_t>(::syscall(SYS_gettid));
  return tid;
}

Status PrepareInputs(const Executor::Impl& impl, const NodeItem& item, TensorValue* inputs) {
  const char* deref = impl.deref_slot.data() + item.input_start;
  for (int i = 0; i < item.num_inputs; ++i) {
    if (deref[i] && inputs[i].ref != nullptr) {
      ASSIGN_OR_RETURN(inputs[i].tensor, inputs[i].ref->Read(*inputs[i].ref_name));
      inputs[i].ref.reset();
    }
  }
  return Status::OK();
}

OpKernelContext::Params MakeParams(const Executor::Impl& impl, const Executor::Args& args, const NodeItem& item,
                                   TensorValue* inputs, TensorValue* outputs, FrameAndIter frame_iter) {
  OpKernelContext::Params p;
  p.kernel = item.kernel;
  p.device = item.device;
  p.resource_mgr = impl.resource_mgr;
  p.step_resource_mgr = args.step_resources;
  p.call_frame = args.call_frame;
  p.cancellation = args.cancellation;
  p.rendezvous = args.rendezvous;
  p.function_runtime = impl.function_runtime;
  p.intra_op_pool = impl.intra_op_pool;
  p.step_id = args.step_id;
  p.frame_iter = frame_iter;
  p.inputs = inputs;
  p.outputs = outputs;
  return p;
}

Status CheckOutputs(const NodeItem& item, const TensorValue* outputs, bool outputs_may_be_missing) {
  for (int i = 0; i < item.num_outputs; ++i) {
    const TensorValue& v = outputs[i];
    if (v.ref != nullptr) continue;
    if (!v.tensor.IsInitialized()) {
      if (!outputs_may_be_missing) return errors::Internal("Kernel returned OK but did not set output ", i);
    } else if (v.tensor.dtype() != item.kernel->output_type(i)) {
      return errors::Internal("Kernel produced ", DataTypeName(v.tensor.dtype()), " for output ", i, " declared ",
                              DataTypeName(item.kernel->output_type(i)));
    }
  }
  return Status::OK();
}

void RecordStats(const Executor::Args& args, const NodeItem& item, int64_t start) {
  NodeExecStats& s = (*args.stats)[item.node->id()];
  s.node = item.node->name();
  s.op = item.node->op();
  s.device = item.device->name();
  s.start_us = start;
  s.end_us = NowMicros();
  s.thread_id = OsThreadId();
}

Status NodeError(const NodeItem& item, const Status& s) {
  return s.WithSuffix(StrCat("\n\t [[node ", item.node->name(), " (", item.node->op(), ") on ", item.device->name(), "]]"));
}

Status RunSyncKernel(const Executor::Impl& impl, const Executor::Args& args, const NodeItem& item,
                     TensorValue* inputs, TensorValue* outputs, bool outputs_may_be_missing,
                     FrameAndIter frame_iter) {
  RETURN_IF_ERROR(PrepareInputs(impl, item, inputs));
  int64_t start = args.stats != nullptr ? NowMicros() : 0;
  OpKernelContext ctx(MakeParams(impl, args, item, inputs, outputs, frame_iter));
  // A kernel that throws (a library's std::bad_alloc) fails its node, not the process.
  try {
    item.kernel->Compute(&ctx);
  } catch (const std::bad_alloc&) {
    ctx.SetStatus(errors::ResourceExhausted("Out of memory inside the kernel"));
  } catch (const std::exception& e) {
    ctx.SetStatus(errors::Internal("The kernel threw: ", e.what()));
  }
  if (args.stats != nullptr) RecordStats(args, item, start);
  RETURN_IF_ERROR(ctx.status());
  return CheckOutputs(item, outputs, outputs_may_be_missing);
}

StepBase::StepBase(const Executor::Args& args, Executor::DoneCallback done)
    : args_(args), max_workers_(args.runner == nullptr ? 1 : args.runner->NumThreads()), done_(std::move(done)) {}

void StepBase::WatchCancellation() {
  if (args_.cancellation == nullptr) return;
  cancel_token_ = args_.cancellation->NewToken();
  refs_.fetch_add(1, std::memory_order_relaxed);  // held by the cancel callback
  const bool registered = args_.cancellation->RegisterCallback(cancel_token_, [this] {
    OnCancel();
    Unref();
  });
  if (!registered) {
    refs_.fetch_sub(1, std::memory_order_relaxed);
    RecordError(errors::Cancelled("Step was cancelled before it started"));
  }
}

void StepBase::RecordError(const Status& s) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (status_.ok()) {
      status_ = s;
      first = true;
    }
  }
  aborted_.store(true, std::memory_order_relaxed);
  if (first && args_.cancellation != nullptr) args_.cancellation->StartCancel();
}

// Stops the step; the error it reports is the first a node gives (a kernel that stopped
// midway names itself), or, when none does, this one.
void StepBase::OnCancel() {
  const std::string waiting = Waiting();
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    cancelled_ = errors::Cancelled("Step was cancelled", waiting.empty() ? "" : " while waiting for node " + waiting);
  }
  aborted_.store(true, std::memory_order_relaxed);
}

void StepBase::Finish() {
  // A callback that StartCancel already took runs (or ran) on its own and drops its
  // reference itself; one still registered is removed here and its reference dropped.
  if (args_.cancellation != nullptr && args_.cancellation->DeregisterCallback(cancel_token_)) Unref();
  Status s;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    s = status_.ok() ? cancelled_ : status_;
  }
  Executor::DoneCallback done = std::move(done_);
  Unref();
  done(s);
}

void StepBase::Unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

}  // namespace executor_internal

namespace {

using namespace executor_internal;

class ExecutorState : public StepBase {
 public:
  ExecutorState(const Executor::Impl& impl, const Executor::Args& args, Executor::DoneCallback done)
      : StepBase(args, std::move(done)),
        impl_(impl),
        num_nodes_(impl.num_nodes()),
        pending_(new std::atomic<int32_t>[impl.num_nodes()]),
        slots_(new TensorValue[impl.total_slots]) {
    for (int i = 0; i < num_nodes_; ++i) {
      pending_[i].store(impl.item(i).initial_pending, std::memory_order_relaxed);
    }
    if (args.stats != nullptr) args.stats->assign(impl.num_nodes(), NodeExecStats());
    WatchCancellation();
  }

  void Start() {
    if (num_nodes_ == 0) {
      Finish();
      return;
    }
    active_workers_.fetch_add(1, std::memory_order_relaxed);
    std::vector<int> stack(impl_.roots.rbegin(), impl_.roots.rend());
    Process(std::move(stack), 0);
  }

 private:
  // Runs nodes from `stack` until it is empty, pushing successors that become ready.
  // `completed` counts nodes this worker finished before (an async node's completion).
  // The caller has counted this worker in active_workers_.
  void Process(std::vector<int> stack, int completed) {
    std::vector<TensorValue> outputs(impl_.max_outputs);
    while (!stack.empty()) {
      MaybeSpill(impl_, &stack, [](int id) { return id; },
                 [this](std::vector<int> batch) { Process(std::move(batch), 0); });
      const int id = stack.back();
      stack.pop_back();
      const NodeItem& item = impl_.item(id);
      TensorValue* inputs = slots_.get() + item.input_start;
      if (item.is_async && !aborted()) {
        // A worker whose last node is an async one that does not finish at once has nothing
        // of its own holding the step open: the node's completion, on another thread, may
        // finish and free it while this call returns. So it leaves the workers first.
        const bool last = stack.empty() && completed == 0;
        if (last) active_workers_.fetch_sub(1, std::memory_order_relaxed);
        if (!StartAsync(id, item, inputs, &stack)) {
          if (last) return;  // the step may be gone
          continue;          // its done callback completes it
        }
        ++completed;
        if (last) active_workers_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (item.is_noop) {
        if (args_.stats != nullptr) RecordStats(args_, item, NowMicros());
      } else if (!aborted()) {
        RunSync(item, inputs, outputs.data());
      }
      Complete(item, outputs.data(), &stack);
      ++completed;
    }
    active_workers_.fetch_sub(1, std::memory_order_relaxed);
    CountCompleted(completed);
  }

  void RunSync(const NodeItem& item, TensorValue* inputs, TensorValue* outputs) {
    Status s = RunSyncKernel(impl_, args_, item, inputs, outputs, false);
    if (!s.ok()) RecordError(item, s);
  }

  // Starts async node `id`. Returns true when it completed before ComputeAsync returned
  // (its value was ready, or its inputs were bad): its outputs then went into `ready` and
  // the caller counts it, since finishing the step from inside this call would free the
  // state under the caller's feet. Otherwise its done callback completes it later.
  bool StartAsync(int id, const NodeItem& item, TensorValue* inputs, std::vector<int>* ready) {
    if (Status s = PrepareInputs(impl_, item, inputs); !s.ok()) {
      RecordError(item, s);
      std::vector<TensorValue> none(impl_.max_outputs);
      Complete(item, none.data(), ready);  // the error is recorded; a skipped node
      return true;
    }
    enum Phase : int { kRunning, kReturned, kDoneEarly };
    struct AsyncCall {
      std::vector<TensorValue> outputs;
      std::unique_ptr<OpKernelContext> ctx;
      int64_t start = 0;
      std::atomic<int> phase{kRunning};
    };
    auto* call = new AsyncCall;
    call->outputs.resize(impl_.max_outputs);
    call->ctx = std::make_unique<OpKernelContext>(MakeParams(impl_, args_, item, inputs, call->outputs.data()));
    call->start = args_.stats != nullptr ? NowMicros() : 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_async_.push_back(id);
    }
    item.kernel->AsAsync()->ComputeAsync(call->ctx.get(), [this, id, call] {
      const NodeItem& it = impl_.item(id);
      {
        std::lock_guard<std::mutex> lock(mu_);
        std::erase(in_flight_async_, id);
      }
      if (args_.stats != nullptr) RecordStats(args_, it, call->start);
      Status s = call->ctx->status();
      if (s.ok()) s = CheckOutputs(it, call->outputs.data(), false);
      if (!s.ok()) RecordError(it, s);
      if (call->phase.exchange(kDoneEarly) == kReturned) {
        AsyncDone(id, call->outputs.data());
        delete call;
      }
    });
    if (call->phase.exchange(kReturned) == kRunning) return false;
    Complete(item, call->outputs.data(), ready);
    delete call;
    return true;
  }

  // Completes async node `id` and goes on, on this thread, with the nodes it made ready.
  void AsyncDone(int id, TensorValue* outputs) {
    const NodeItem& item = impl_.item(id);
    std::vector<int> stack;
    Complete(item, outputs, &stack);
    active_workers_.fetch_add(1, std::memory_order_relaxed);
    Process(std::move(stack), 1);
  }

  void PropagateOutputs(const NodeItem& item, TensorValue* outputs, std::vector<int>* ready) {
    const OutEdge* edges = item.out_edges();
    for (int e = 0; e < item.num_out_edges; ++e) {
      const OutEdge& edge = edges[e];
      if (edge.dst_slot >= 0) {
        TensorValue& out = outputs[edge.src_output];
        if (edge.last_use) {
          slots_[edge.dst_slot] = std::move(out);
        } else {
          slots_[edge.dst_slot] = out;
        }
      }
      if (pending_[edge.dst].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        ready->push_back(edge.dst);
        // Most likely the next node this worker runs: start loading its item and edges.
        const char* next = reinterpret_cast<const char*>(&impl_.item(edge.dst));
        __builtin_prefetch(next);
        __builtin_prefetch(next + 64);
      }
    }
    for (int i = 0; i < item.num_outputs; ++i) outputs[i] = TensorValue();
  }

  // Hands a finished node's outputs to its successors and releases its inputs.
  void Complete(const NodeItem& item, TensorValue* outputs, std::vector<int>* ready) {
    PropagateOutputs(item, outputs, ready);
    TensorValue* inputs = slots_.get() + item.input_start;
    for (int i = 0; i < item.num_inputs; ++i) inputs[i] = TensorValue();
  }

  void CountCompleted(int n) {
    // Read before the increment: once another worker's increment completes the step, it
    // frees this object.
    const int total = num_nodes_;
    if (completed_.fetch_add(n, std::memory_order_acq_rel) + n == total) Finish();
  }

  void RecordError(const NodeItem& item, const Status& s) { StepBase::RecordError(NodeError(item, s)); }

  std::string Waiting() override {
    std::string waiting;
    std::lock_guard<std::mutex> lock(mu_);
    for (int id : in_flight_async_) {
      const NodeItem& it = impl_.item(id);
      waiting += StrCat(waiting.empty() ? "" : ", ", it.node->DebugName(), " on ", it.device->name());
    }
    return waiting;
  }

  const Executor::Impl& impl_;
  const int num_nodes_;
  std::unique_ptr<std::atomic<int32_t>[]> pending_;
  std::unique_ptr<TensorValue[]> slots_;
  std::atomic<int> completed_{0};
  std::mutex mu_;
  std::vector<int> in_flight_async_;  // guarded by mu_
};

}  // namespace

Executor::Executor(std::unique_ptr<Graph> graph, std::unique_ptr<Impl> impl)
    : graph_(std::move(graph)), impl_(std::move(impl)) {}

Executor::~Executor() = default;

StatusOr<std::unique_ptr<Executor>> Executor::Create(std::unique_ptr<Graph> graph, Params params) {
  auto impl = std::make_unique<Impl>();
  impl->resource_mgr = params.resource_mgr;
  impl->function_runtime = params.function_runtime;
  impl->intra_op_pool = params.intra_op_pool;
  // Lay out the arena: item, then its edges, each item aligned for NodeItem.
  size_t bytes = 0;
  for (const Node* node : graph->nodes()) {
    impl->item_offset.push_back(static_cast<uint32_t>(bytes));
    bytes += sizeof(NodeItem) + node->out_edges().size() * sizeof(OutEdge);
    bytes = (bytes + alignof(NodeItem) - 1) / alignof(NodeItem) * alignof(NodeItem);
  }
  impl->arena.reset(new std::byte[bytes]);
  // Slots: each node's inputs are contiguous.
  int slot = 0;
  for (const Node* node : graph->nodes()) {
    NodeItem& item = *new (&impl->mutable_item(node->id())) NodeItem();
    item.node = node;
    item.num_inputs = node->num_inputs();
    item.num_outputs = node->num_outputs();
    item.input_start = slot;
    slot += item.num_inputs;
    item.initial_pending = item.num_inputs + static_cast<int>(node->control_inputs().size());
    for (int i = 0; i < item.num_inputs; ++i) impl->deref_slot.push_back(!node->input_is_ref(i));
    impl->max_outputs = std::max(impl->max_outputs, item.num_outputs);
    if (item.initial_pending == 0) impl->roots.push_back(node->id());

    ASSIGN_OR_RETURN(DeviceBase* device, params.lookup_device(*node));
    item.device = device;
    ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel, params.kernels->CreateKernel(*node, device));
    item.kernel = kernel.get();
    item.is_async = kernel->AsAsync() != nullptr;
    item.is_expensive = kernel->IsExpensive();
    item.is_noop = IsNoOp(node->op());
    impl->kernels.push_back(std::move(kernel));
  }
  impl->total_slots = slot;
  for (const Node* node : graph->nodes()) {
    NodeItem& item = impl->mutable_item(node->id());
    OutEdge* edges = item.mutable_out_edges();
    std::vector<int> last_edge_for_output(node->num_outputs(), -1);
    for (const Edge* e : node->out_edges()) {
      OutEdge& oe = edges[item.num_out_edges];
      oe.dst = e->dst->id();
      oe.src_output = e->src_output;
      oe.dst_slot = e->IsControl() ? -1 : impl->item(e->dst->id()).input_start + e->dst_input;
      oe.last_use = false;
      if (!e->IsControl()) last_edge_for_output[e->src_output] = item.num_out_edges;
      ++item.num_out_edges;
    }
    for (int idx : last_edge_for_output) {
      if (idx >= 0) edges[idx].last_use = true;
    }
  }
  RETURN_IF_ERROR(AnalyzeControlFlow(*graph, impl.get()));
  return std::unique_ptr<Executor>(new Executor(std::move(graph), std::move(impl)));
}

void Executor::RunAsync(const Args& args, DoneCallback done) const {
  if (!impl_->flow.empty()) {
    RunWithFrames(*impl_, args, std::move(done));
    return;
  }
  (new ExecutorState(*impl_, args, std::move(done)))->Start();
}

Status Executor::Run(const Args& args) const {
  // Fast path: a step that finishes on this thread never touches the condition variable.
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<bool> done{false};
    Status status;
  } w;
  RunAsync(args, [&w](const Status& s) {
    std::lock_guard<std::mutex> lock(w.mu);
    w.status = s;
    w.done.store(true, std::memory_order_release);
    w.cv.notify_all();
  });
  if (!w.done.load(std::memory_order_acquire)) {
    std::unique_lock<std::mutex> lock(w.mu);
    w.cv.wait(lock, [&] { return w.done.load(std::memory_order_acquire); });
  }
  std::lock_guard<std::mutex> lock(w.mu);
  return w.status;
}

}  // namespace tessera
