// RunStep: one step of the partitions a process runs (one executor per device), as a direct
// session runs its own and a worker runs those its master registered: it ties the step's
// cancellation to its rendezvous, gives the step resources of its own, runs every
// partition together, and waits for all of them. CreatePartitionExecutor makes those
// executors, one per device's partition (step_plan.h).
//
//   CancellationManager cancellation;
//   Status s = RunStep(executors, {.step_id = id, .call_frame = &frame, .rendezvous = r,
//                                  .cancellation = &cancellation, .pool = pool, .timeout = 5s});
//
// An error in one partition cancels the step, which wakes every receive still waiting in
// the rendezvous, and the first error is returned, preferring the cause over the
// cancellations it caused. Past the timeout the step is cancelled and DeadlineExceeded.
// Thread-safe: steps may run concurrently.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/device_mgr.h"
#include "runtime/executor.h"

namespace tessera {

// The executor of one device's partition: every node on `device`, stateful ops in
// `resources` (borrowed; they must outlive the executor). Errors name the node.
StatusOr<std::unique_ptr<Executor>> CreatePartitionExecutor(std::unique_ptr<Graph> partition, Device* device,
                                                            ResourceMgr* resources);

struct StepRun {
  int64_t step_id = 0;
  CallFrame* call_frame = nullptr;
  // Where the partitions' _Send/_Recv pairs meet; may be null when they have none.
  Rendezvous* rendezvous = nullptr;
  // The caller's, which may cancel the step from outside (a session closing); must be set.
  CancellationManager* cancellation = nullptr;
  // Where every partition but one starts, and the executors' spilled work; the calling
  // thread runs the first partition unless a timeout or `abandoned` is set, when it keeps
  // the time instead. Null runs a single partition on the calling thread alone.
  ThreadPool* pool = nullptr;
  std::chrono::milliseconds timeout{0};  // 0: none
  // Polled while the step runs; true cancels it (a caller that went away).
  std::function<bool()> abandoned;
  // Filled with the stats of every node that ran, partition by partition; null for none.
  std::vector<NodeExecStats>* stats = nullptr;
};

Status RunStep(const std::vector<const Executor*>& executors, const StepRun& run);

}  // namespace tessera
