// GraphMgr: the graphs a cluster's masters registered on this task, one partition per
// device of the task, run as steps the masters start. A step's partitions meet the other
// tasks' partitions through a RemoteRendezvous on the step id the master chose; variables
// and queues are the task's own (its runtime Server's resource containers), shared with
// every session that names them.
//
//   GraphMgr graphs(server, "worker", 1, channels, pool);
//   auto handle = graphs.Register(partitions);   // (device, Graph) pairs of a StepPlan
//   std::map<int, Tensor> retvals;
//   Status s = graphs.Run(*handle, step_id, {{0, x}}, {}, &retvals);
//   graphs.CleanupStep(step_id);   // once every task of the step is done
//
// All methods are thread-safe; steps of one graph may run concurrently.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "distributed/worker_channels.h"
#include "runtime/executor.h"
#include "runtime/server.h"

namespace tessera {

class GraphMgr {
 public:
  // `pool` runs the steps' nodes; borrowed, it must outlive the GraphMgr.
  GraphMgr(std::shared_ptr<Server> local, std::string job, int task, std::shared_ptr<WorkerChannels> channels,
           ThreadPool* pool);
  ~GraphMgr();

  // Makes the executors of `partitions` (device full name, graph). InvalidArgument for a
  // device this task does not have, or the executor's error naming the node.
  StatusOr<std::string> Register(std::vector<std::pair<std::string, std::unique_ptr<Graph>>> partitions);
  // NotFound for a handle not registered (or already deregistered). Steps in flight finish.
  Status Deregister(const std::string& handle);

  struct StepOptions {
    std::chrono::milliseconds timeout{0};  // 0: none
    // Polled while the step runs; true cancels it (the master gave up on the step).
    std::function<bool()> abandoned;
  };
  // Runs the graph's partitions as step `step_id`. `args` are the step's feeds by _Arg
  // index; `retvals` receives the tensors of this task's _Retval nodes by index.
  Status Run(const std::string& handle, int64_t step_id, std::map<int, Tensor> args, const StepOptions& options,
             std::map<int, Tensor>* retvals);
  // Forgets the step's rendezvous on this task.
  void CleanupStep(int64_t step_id);

  const std::string& task_name() const { return task_name_; }

 private:
  struct Item;
  const std::shared_ptr<Server> local_;
  const std::string job_;
  const int task_;
  const std::string task_name_;
  const std::shared_ptr<WorkerChannels> channels_;
  ThreadPool* const pool_;
  std::mutex mu_;
  int64_t last_handle_ = 0;                             // guarded by mu_
  std::map<std::string, std::shared_ptr<Item>> items_;  // guarded by mu_
};

}  // namespace tessera
