// GrpcWorker: another process's task as a WorkerInterface, over its WorkerService. Feeds and
// fetches go as encoded tensors, partitions as JSON GraphDefs (the one time a step's graph is
// written out), and a step's RPC outlives the step's own deadline by a grace, so that the
// task's DeadlineExceeded, which names the node, comes back first. A step that ended well
// leaves its cleanup to ride on the task's next RunGraph; at most kMaxDeferredCleanups
// wait, the rest (and those left when the worker goes) are sent on their own.
// Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/worker_channels.h"
#include "distributed/worker_interface.h"

namespace tessera {

class GrpcWorker final : public WorkerInterface {
 public:
  static constexpr size_t kMaxDeferredCleanups = 16;

  // `address` is the task's, as the cluster names it.
  GrpcWorker(std::string task, std::string address, std::shared_ptr<grpc::Channel> channel,
             std::shared_ptr<WorkerChannels> channels);
  ~GrpcWorker() override;  // sends the cleanups still deferred

  StatusOr<std::vector<RemoteDevice>> GetDevices(std::chrono::milliseconds timeout) override;
  StatusOr<std::string> RegisterGraph(std::vector<std::pair<std::string, std::unique_ptr<Graph>>> partitions,
                                      std::chrono::milliseconds timeout) override;
  void DeregisterGraph(const std::string& handle) override;
  std::unique_ptr<RunGraphCall> RunGraphAsync(RunGraphRequest request, RunGraphDone done) override;
  void DeferCleanup(int64_t step_id) override;
  void CleanupSteps(std::vector<int64_t> step_ids) override;
  Status ResetContainers(const std::vector<std::string>& containers) override;

 private:
  class Call;
  struct Stub;  // the generated stub, kept out of this header
  std::vector<int64_t> TakeDeferredCleanups();

  const std::string address_;
  const std::unique_ptr<Stub> stub_;
  const std::shared_ptr<WorkerChannels> channels_;
  std::mutex cleanup_mu_;
  std::vector<int64_t> deferred_cleanups_;  // guarded by cleanup_mu_
};

}  // namespace tessera
