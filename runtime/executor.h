// Executor: runs a placed graph, each node once per step, on the inter-op pool.
//
//   auto exec = Executor::Create(std::move(graph), {.lookup_device = ..., .resource_mgr = rm});
//   Executor::Args args{.call_frame = &frame, .runner = inter_op_pool};
//   Status s = (*exec)->Run(args);
//
// A node runs when all its data and control inputs are done. The executor precomputes, per
// node, a flat item (kernel, input slot offset, out-edge list, initial pending count); a
// step then holds only an array of atomic pending counts and an array of input slots. The
// thread that finishes a node keeps one newly ready successor and hands extra work to the
// pool only while fewer workers than the pool's threads are active, so at most that many
// threads run kernels of one step (the calling thread counts as one of them).
//
// A graph with TensorFlow 1.x's control flow (Switch, Merge, Enter, Exit, NextIteration)
// runs as TensorFlow's executor runs it: the output a Switch does not take is dead, and a
// node with a dead input is skipped and passes deadness on, but for a Merge, which runs as
// soon as one input is alive; each loop runs in a frame of its own, its body once per
// iteration, up to the Enter's parallel_iterations at once. Graphs without such nodes take
// a path that knows nothing of frames.
//
// An error in any kernel aborts the step: nodes not yet run are skipped, async kernels are
// cancelled, and the first error is returned with the node, op and device appended.
//
// RunAsync/Run may be called concurrently for different steps; the Executor is immutable
// after Create. The graph and everything in Params must outlive the Executor.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "kernels/function_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_kernel.h"
#include "runtime/step_stats.h"

namespace tessera {

class Executor {
 public:
  struct Params {
    // The device a node was assigned to.
    std::function<StatusOr<DeviceBase*>(const Node&)> lookup_device;
    ResourceMgr* resource_mgr = nullptr;
    const KernelRegistry* kernels = KernelRegistry::Global();
    // What kernels run function attrs with (OpKernelContext::function_runtime); may be
    // nullptr for a graph without them.
    const FunctionRuntime* function_runtime = nullptr;
    // Where set, the pool every kernel splits its work on (OpKernelContext::intra_op_pool)
    // in place of its device's own.
    ThreadPool* intra_op_pool = nullptr;
  };

  struct Args {
    int64_t step_id = 0;
    CallFrame* call_frame = nullptr;
    // Where spilled work runs. nullptr runs everything on the calling thread.
    ThreadPool* runner = nullptr;
    // Cancelling it aborts the step. May be nullptr.
    CancellationManager* cancellation = nullptr;
    // Where _Send/_Recv and collective kernels meet their peers on other devices. May be
    // nullptr for a graph without them.
    Rendezvous* rendezvous = nullptr;
    // Resources that live for this step only (OpKernelContext::step_resource_manager); the
    // caller drops them after the step. May be nullptr for a graph without stacks.
    ResourceMgr* step_resources = nullptr;
    // When non-null, filled with one entry per node that ran (indexed by node id).
    std::vector<NodeExecStats>* stats = nullptr;
  };

  using DoneCallback = std::function<void(const Status&)>;

  // Creates every node's kernel on its device. Errors name the node.
  static StatusOr<std::unique_ptr<Executor>> Create(std::unique_ptr<Graph> graph, Params params);
  ~Executor();

  // Runs ready nodes on the calling thread first; `done` is called exactly once, on
  // whichever thread finishes the step (possibly before RunAsync returns).
  void RunAsync(const Args& args, DoneCallback done) const;
  // RunAsync, then waits.
  Status Run(const Args& args) const;

  const Graph& graph() const { return *graph_; }

  struct Impl;

 private:
  Executor(std::unique_ptr<Graph> graph, std::unique_ptr<Impl> impl);
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
