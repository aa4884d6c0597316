// LocalWorker: the master's own task as a WorkerInterface: its GraphMgr and its runtime
// Server, called directly. A step runs on the calling thread. Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "distributed/graph_mgr.h"
#include "distributed/worker_interface.h"

namespace tessera {

class LocalWorker final : public WorkerInterface {
 public:
  LocalWorker(std::string task, std::shared_ptr<Server> local, std::shared_ptr<GraphMgr> graphs);

  StatusOr<std::vector<RemoteDevice>> GetDevices(std::chrono::milliseconds timeout) override;
  StatusOr<std::string> RegisterGraph(std::vector<std::pair<std::string, std::unique_ptr<Graph>>> partitions,
                                      std::chrono::milliseconds timeout) override;
  void DeregisterGraph(const std::string& handle) override;
  std::unique_ptr<RunGraphCall> RunGraphAsync(RunGraphRequest request, RunGraphDone done) override;
  void DeferCleanup(int64_t step_id) override;
  void CleanupSteps(std::vector<int64_t> step_ids) override;
  Status ResetContainers(const std::vector<std::string>& containers) override;

 private:
  const std::shared_ptr<Server> local_;
  const std::shared_ptr<GraphMgr> graphs_;
};

}  // namespace tessera
