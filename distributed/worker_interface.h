// WorkerInterface: how a master reaches one task of its cluster, whether that task is the
// master's own (LocalWorker, local_worker.h) or another process (GrpcWorker, grpc_worker.h),
// as TensorFlow's WorkerInterface. A MasterSession runs every step through it and does not
// know which it has.
//
//   std::unique_ptr<WorkerInterface> worker = ...;
//   ASSIGN_OR_RETURN(std::vector<RemoteDevice> devices, worker->GetDevices(wait));
//   ASSIGN_OR_RETURN(std::string handle, worker->RegisterGraph(std::move(partitions), timeout));
//   auto call = worker->RunGraphAsync({.handle = handle, .step_id = id, ...}, done);
//   ... call->Cancel() on an error elsewhere ...
//   worker->DeferCleanup(id);   // once every task of the step is done
//
// Every method may be called concurrently; a worker's calls name its task in their errors.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distributed/remote_device.h"
#include "graph/graph.h"

namespace tessera {

// One step's run of a registered graph on a task.
struct RunGraphRequest {
  std::string handle;
  int64_t step_id = 0;
  std::chrono::milliseconds timeout{0};  // 0: none
  // The feeds this task's partitions take, by _Arg index; `names` says what the client
  // called each, for errors.
  std::map<int, Tensor> args;
  std::map<int, std::string> names;
  // Polled while a worker in this process runs the step; true cancels it. A step in flight
  // elsewhere is cancelled through its call.
  std::function<bool()> abandoned;
};

// A RunGraph in flight.
class RunGraphCall {
 public:
  virtual ~RunGraphCall() = default;
  // Stops the step on the task; the call still ends through its `done`. May be called at any
  // time, also after it ended.
  virtual void Cancel() = 0;
};

class WorkerInterface {
 public:
  explicit WorkerInterface(std::string task) : task_(std::move(task)) {}
  virtual ~WorkerInterface() = default;
  WorkerInterface(const WorkerInterface&) = delete;
  WorkerInterface& operator=(const WorkerInterface&) = delete;

  // "/job:worker/replica:0/task:1"
  const std::string& task() const { return task_; }

  // The task's devices, waiting up to `timeout` for a task that is not up yet (tasks start
  // in any order). Unavailable naming the task when it does not answer.
  virtual StatusOr<std::vector<RemoteDevice>> GetDevices(std::chrono::milliseconds timeout) = 0;

  // Hands the task its partitions of a step plan (device full name, graph); the handle runs
  // them. The errors are the task's: a device it lacks, a node it cannot run. `timeout`
  // (0: the transport's own) is the step's: registering is part of its first run.
  virtual StatusOr<std::string> RegisterGraph(std::vector<std::pair<std::string, std::unique_ptr<Graph>>> partitions,
                                              std::chrono::milliseconds timeout) = 0;
  // Best effort: a task that is gone has nothing left to forget.
  virtual void DeregisterGraph(const std::string& handle) = 0;

  using RunGraphDone = std::function<void(const Status& status, std::map<int, Tensor> retvals)>;
  // Runs one step of a registered graph; `done` gets the tensors of the task's _Retval nodes
  // by index, and is called exactly once, perhaps before this returns (a worker in this
  // process runs the step on the calling thread).
  virtual std::unique_ptr<RunGraphCall> RunGraphAsync(RunGraphRequest request, RunGraphDone done) = 0;

  // Forgets a step that ended well, when convenient: another process's worker lets the
  // cleanup ride on its next RunGraph. At the latest when the worker is destroyed.
  virtual void DeferCleanup(int64_t step_id) = 0;
  // Forgets steps now (a step that failed may have left tensors behind). Fire and forget.
  virtual void CleanupSteps(std::vector<int64_t> step_ids) = 0;

  // Drops the task's resource containers (Session::Reset).
  virtual Status ResetContainers(const std::vector<std::string>& containers) = 0;

 private:
  const std::string task_;
};

}  // namespace tessera
