#include "distributed/local_worker.h"

namespace tessera {
namespace {

// The step has ended when the call is made: there is nothing left to cancel.
class EndedCall final : public RunGraphCall {
 public:
  void Cancel() override {}
};

}  // namespace

LocalWorker::LocalWorker(std::string task, std::shared_ptr<Server> local, std::shared_ptr<GraphMgr> graphs)
    : WorkerInterface(std::move(task)), local_(std::move(local)), graphs_(std::move(graphs)) {}

StatusOr<std::vector<RemoteDevice>> LocalWorker::GetDevices(std::chrono::milliseconds) {
  std::vector<RemoteDevice> devices;
  for (const Device* d : local_->devices()->devices()) devices.push_back(DescribeDevice(*d));
  return devices;
}

StatusOr<std::string> LocalWorker::RegisterGraph(
    std::vector<std::pair<std::string, std::unique_ptr<Graph>>> partitions, std::chrono::milliseconds) {
  return graphs_->Register(std::move(partitions));
}

void LocalWorker::DeregisterGraph(const std::string& handle) { (void)graphs_->Deregister(handle); }

std::unique_ptr<RunGraphCall> LocalWorker::RunGraphAsync(RunGraphRequest request, RunGraphDone done) {
  GraphMgr::StepOptions options;
  options.timeout = request.timeout;
  options.abandoned = std::move(request.abandoned);
  std::map<int, Tensor> retvals;
  Status s = graphs_->Run(request.handle, request.step_id, std::move(request.args), options, &retvals);
  done(s, std::move(retvals));
  return std::make_unique<EndedCall>();
}

void LocalWorker::DeferCleanup(int64_t step_id) { graphs_->CleanupStep(step_id); }

void LocalWorker::CleanupSteps(std::vector<int64_t> step_ids) {
  for (int64_t id : step_ids) graphs_->CleanupStep(id);
}

Status LocalWorker::ResetContainers(const std::vector<std::string>& containers) {
  local_->resources()->Cleanup(containers);
  return Status::OK();
}

}  // namespace tessera
