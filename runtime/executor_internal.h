// What the two ways of running an executor's graph share: the precomputed per-node items
// and the calls around a kernel. executor.cc runs graphs without control flow, each node
// once per step; executor_frames.cc runs graphs with Switch/Merge and loops, where nodes
// run once per frame and iteration, or not at all. Internal to runtime/.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/executor.h"

namespace tessera::executor_internal {

struct OutEdge {
  int dst;          // node id
  int dst_slot;     // index into the step's slots; -1 for a control edge
  int src_output;   // -1 for a control edge
  bool last_use;    // the last edge reading src_output: it may take the tensor by move
};

struct NodeItem {
  OpKernel* kernel = nullptr;
  DeviceBase* device = nullptr;
  const Node* node = nullptr;
  bool is_async = false;
  bool is_expensive = true;
  bool is_noop = false;  // runs without calling its kernel, as TensorFlow's executor does
  int num_inputs = 0;
  int num_outputs = 0;
  int input_start = 0;  // first slot of this node's inputs
  int num_out_edges = 0;  // the OutEdges stored right after this item
  int initial_pending = 0;

  const OutEdge* out_edges() const { return reinterpret_cast<const OutEdge*>(this + 1); }
  OutEdge* mutable_out_edges() { return reinterpret_cast<OutEdge*>(this + 1); }
};
static_assert(std::is_trivially_destructible_v<NodeItem> && alignof(OutEdge) <= alignof(NodeItem));

// A control-flow node's role, and for Enter, the frame it enters.
struct FlowItem {
  bool is_merge = false;
  bool is_switch = false;
  bool is_enter = false;
  bool is_exit = false;
  bool is_next_iteration = false;
  bool is_control_trigger = false;
  bool is_retval = false;  // a fetch: it must not be dead
  // _Send and _Recv run when dead too, so that the other device hears of the dead value.
  bool is_send = false;
  bool is_recv = false;
  bool is_constant_enter = false;
  int frame = -1;                   // Enter: the frame it enters, an index into Impl::frames
  int parallel_iterations = 1;      // Enter
  // Where the node's state lives in an iteration of the frame its inputs arrive in: its
  // index there (pending and dead counts) and the offset that turns its global input slots
  // (NodeItem::input_start, OutEdge::dst_slot) into that iteration's.
  int local_id = 0;
  int slot_offset = 0;
};

// A static frame: the root (index 0, name "") or a loop, named by its Enters' frame_name.
// An iteration of it holds state for its own nodes only, so a small loop in a large graph
// costs per iteration what its body needs.
struct FrameInfo {
  std::string name;
  int num_enters = 0;
  int num_slots = 0;
  std::vector<int> initial_pending;  // by local id; a Merge's: 2 per control input, +1 until a live input arrives
};

}  // namespace tessera::executor_internal

namespace tessera {

struct Executor::Impl {
  using NodeItem = executor_internal::NodeItem;
  // Each node's item followed by its out-edges, in one buffer, so that running a node
  // touches one or two adjacent cache lines (the layout TensorFlow's GraphView uses).
  std::unique_ptr<std::byte[]> arena;
  std::vector<uint32_t> item_offset;  // by node id, into arena
  std::vector<int> roots;
  std::vector<std::unique_ptr<OpKernel>> kernels;
  // Per input slot: the kernel wants a value, so a reference arriving there is read.
  std::vector<char> deref_slot;
  ResourceMgr* resource_mgr = nullptr;
  const FunctionRuntime* function_runtime = nullptr;
  ThreadPool* intra_op_pool = nullptr;
  int total_slots = 0;
  int max_outputs = 0;
  // By node id, for a graph with control flow; empty for one without.
  std::vector<executor_internal::FlowItem> flow;
  std::vector<executor_internal::FrameInfo> frames;

  int num_nodes() const { return static_cast<int>(item_offset.size()); }
  const NodeItem& item(int id) const {
    return *reinterpret_cast<const NodeItem*>(arena.get() + item_offset[id]);
  }
  NodeItem& mutable_item(int id) { return *reinterpret_cast<NodeItem*>(arena.get() + item_offset[id]); }
};

namespace executor_internal {

int64_t NowMicros();
int64_t OsThreadId();

// Reads the references arriving where the kernel wants values.
Status PrepareInputs(const Executor::Impl& impl, const NodeItem& item, TensorValue* inputs);
OpKernelContext::Params MakeParams(const Executor::Impl& impl, const Executor::Args& args, const NodeItem& item,
                                   TensorValue* inputs, TensorValue* outputs, FrameAndIter frame_iter = {});
// Runs a synchronous kernel: prepares its inputs, calls Compute (an exception fails the node,
// not the process), records its stats and checks its outputs (a Switch leaves one unset).
Status RunSyncKernel(const Executor::Impl& impl, const Executor::Args& args, const NodeItem& item,
                     TensorValue* inputs, TensorValue* outputs, bool outputs_may_be_missing,
                     FrameAndIter frame_iter = {});
// A kernel that returned OK must have produced every output with its declared type.
Status CheckOutputs(const NodeItem& item, const TensorValue* outputs, bool outputs_may_be_missing);
void RecordStats(const Executor::Args& args, const NodeItem& item, int64_t start);
// The error with the node, op and device appended, as TensorFlow prints them.
Status NodeError(const NodeItem& item, const Status& s);

// What a step of either kind does from start to end: it watches the step's cancellation,
// keeps the first error, hands work to idle threads, and frees itself once it is done and
// no cancel callback holds it.
class StepBase {
 public:
  virtual ~StepBase() = default;

 protected:
  StepBase(const Executor::Args& args, Executor::DoneCallback done);
  // Registers the cancel callback: the derived constructor's last call, since the callback
  // may run at once on another thread and must find the whole object.
  void WatchCancellation();
  // Keeps the first error; the first also cancels the rest of the step.
  void RecordError(const Status& s);
  bool aborted() const { return aborted_.load(std::memory_order_relaxed); }
  // Calls the step's done callback with the first error (or the cancellation) and lets go
  // of this object, which is freed once no cancel callback holds it.
  void Finish();
  // For a cancellation's message: the nodes the step is waiting for, "" for none.
  virtual std::string Waiting() { return ""; }

  // Hands half of `stack` to another worker, repeatedly, while that can help: at least two
  // expensive nodes, or a large batch of cheap ones, and a free thread for them. `id` gives
  // a task's node; `process(batch)` runs a batch on the worker it was handed to.
  template <typename Task, typename Id, typename Process>
  void MaybeSpill(const Executor::Impl& impl, std::vector<Task>* stack, Id id, Process process) {
    constexpr size_t kCheapSpillThreshold = 64;
    if (args_.runner == nullptr) return;
    while (stack->size() >= 2 && active_workers_.load(std::memory_order_relaxed) < max_workers_ &&
           (stack->size() >= kCheapSpillThreshold || impl.item(id(stack->back())).is_expensive)) {
      active_workers_.fetch_add(1, std::memory_order_relaxed);
      const size_t half = stack->size() / 2;
      std::vector<Task> batch(stack->begin(), stack->begin() + half);
      stack->erase(stack->begin(), stack->begin() + half);
      args_.runner->Schedule([process, batch = std::move(batch)]() mutable { process(std::move(batch)); });
    }
  }

  const Executor::Args args_;
  const int max_workers_;
  std::atomic<int> active_workers_{0};

 private:
  void OnCancel();
  void Unref();

  Executor::DoneCallback done_;
  std::atomic<int> refs_{1};  // the step itself, plus a registered cancel callback
  std::atomic<bool> aborted_{false};
  CancellationManager::Token cancel_token_ = 0;
  std::mutex error_mu_;
  Status status_;     // guarded by error_mu_: the first error
  Status cancelled_;  // guarded by error_mu_: set when the step was cancelled
};

// Runs one step of a graph with control flow (executor_frames.cc).
void RunWithFrames(const Executor::Impl& impl, const Executor::Args& args, Executor::DoneCallback done);
// Fills impl.flow and impl.frames; InvalidArgument for a malformed loop. A partition with
// no control flow of its own still needs it when a _Recv may bring a dead value (the
// partitioner marks those with kMaybeDeadAttr).
Status AnalyzeControlFlow(const Graph& graph, Executor::Impl* impl);

}  // namespace executor_internal
}  // namespace tessera
