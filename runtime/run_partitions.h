// RunPartitions: runs the executors of one step (one per device) together and waits for
// all of them: what a session does with its partitions in one process, and what a cluster
// task does with the partitions its master registered there. CreatePartitionExecutor makes
// those executors, one per device's partition.
//
//   Executor::Args args{.step_id = id, .call_frame = &frame, .runner = pool, .rendezvous = r};
//   Status s = RunPartitions(executors, args, {.pool = pool, .timeout = 5s});
//
// An error in one partition cancels the step (args.cancellation, which the caller has tied
// to the rendezvous' abort), and the first error is returned, preferring the cause over the
// cancellations it caused. Past the timeout the step is cancelled and DeadlineExceeded.
// Thread-safe: steps may run concurrently.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "runtime/device.h"
#include "runtime/executor.h"

namespace tessera {

struct PartitionRunOptions {
  // Where every partition but one starts; the calling thread runs the first unless a
  // timeout is set, when it keeps the time instead.
  ThreadPool* pool = nullptr;
  std::chrono::milliseconds timeout{0};  // 0: none
  // Polled while the step runs; true cancels it (a caller that went away).
  std::function<bool()> abandoned;
  // One entry per executor, filled with its nodes' stats; nullptr for none.
  std::vector<std::vector<NodeExecStats>>* stats = nullptr;
};

// The executor of one device's partition: every node on `device`, stateful ops in
// `resources` (borrowed; they must outlive the executor). The GraphDef is released as soon as
// the graph is made: a large graph takes gigabytes in every form. Errors name the node.
StatusOr<std::unique_ptr<Executor>> CreatePartitionExecutor(GraphDef partition, Device* device,
                                                            ResourceMgr* resources);

// args.cancellation must be set.
Status RunPartitions(const std::vector<const Executor*>& executors, const Executor::Args& args,
                     const PartitionRunOptions& options);

}  // namespace tessera
