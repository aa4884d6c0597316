// MasterSession: a client's session on the cluster task it named as its target (the
// master). At creation it asks every task the session may use (config.device_filters) for
// its devices, and places the graph over all of them; the master's own devices come first
// for nodes that ask for none. For each distinct (feeds, fetches, targets) it makes the
// step plan (runtime/step_plan.h) and registers each task's partitions with that task's
// worker (worker_interface.h: its own task in this process, the others over gRPC). A step
// then runs every task's graph under one step id, so their _Send/_Recv pairs meet by
// rendezvous key, and ends with every task forgetting the step.
//
// A task that does not answer fails the step with Unavailable naming it; an error on one
// task cancels the step on the others. Closing the session deregisters its graphs.
// Run and Extend may be called concurrently.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "distributed/graph_mgr.h"
#include "distributed/remote_device.h"
#include "distributed/worker_channels.h"
#include "distributed/worker_interface.h"
#include "placement/device_set.h"
#include "runtime/session_options.h"
#include "runtime/step_plan.h"

namespace tessera {

class MasterSession {
 public:
  // What the master's task lends its sessions.
  struct Environment {
    std::string job;  // the master's own task
    int task = 0;
    std::shared_ptr<Server> local;
    std::shared_ptr<GraphMgr> local_graphs;
    std::shared_ptr<WorkerChannels> channels;
    // Makes the worker of a task of channels' cluster; when unset, the master's own task is
    // a LocalWorker and the others GrpcWorkers.
    std::function<StatusOr<std::unique_ptr<WorkerInterface>>(const std::string& job, int task)> new_worker;
  };

  // Waits up to `discovery_timeout` for each task to answer, logging the ones still awaited.
  static StatusOr<std::unique_ptr<MasterSession>> Create(Environment environment, const SessionConfig& config,
                                                         const GraphSpec& graph,
                                                         std::chrono::milliseconds discovery_timeout);
  ~MasterSession();

  // `abandoned`, polled while the step runs, cancels it on every task when it turns true (a
  // client that went away).
  Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, const std::function<bool()>& abandoned = nullptr);

  // Session::Extend's: adds `more` to the graph, placing its nodes; nodes already placed
  // keep their devices, and plans already made stay. May run beside Run.
  Status Extend(const GraphSpec& more);

  std::vector<PlacementRecord> placement() const;
  // Every device placed over, in placement order.
  const std::vector<RemoteDevice>& devices() const { return devices_; }

 private:
  struct Plan;
  MasterSession() = default;
  // `timeout` (0: none) bounds the registration a new plan needs.
  StatusOr<std::shared_ptr<const Plan>> GetOrCreatePlan(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                        const std::vector<std::string>& fetches,
                                                        const std::vector<std::string>& targets,
                                                        std::chrono::milliseconds timeout);
  // Registers each task's partitions of `step` with its worker.
  StatusOr<std::shared_ptr<const Plan>> Register(StepPlan step, std::chrono::milliseconds timeout);

  Environment env_;
  SessionConfig config_;
  std::vector<RemoteDevice> devices_;
  std::map<std::string, std::unique_ptr<WorkerInterface>> tasks_;  // by task name
  DeviceSet device_set_;
  mutable std::shared_mutex graph_mu_;  // Extend writes, plans read
  std::unique_ptr<Graph> graph_;             // guarded by graph_mu_
  std::vector<PlacementRecord> placement_;  // guarded by graph_mu_

  std::mutex plans_mu_;
  std::map<std::string, std::shared_ptr<const Plan>> plans_;  // guarded by plans_mu_
};

}  // namespace tessera
