#include "distributed/graph_mgr.h"

#include "distributed/cluster_spec.h"
#include "distributed/remote_rendezvous.h"
#include "runtime/run_step.h"

namespace tessera {
namespace {

// The step's feeds and fetches by their _Arg and _Retval indices: a task sees only those of
// its own partitions.
class MapCallFrame final : public CallFrame {
 public:
  explicit MapCallFrame(std::map<int, Tensor> args) : args_(std::move(args)) {}
  StatusOr<Tensor> GetArg(int index) const override {
    auto it = args_.find(index);
    if (it == args_.end()) return errors::Internal("the master sent no tensor for argument ", index);
    return it->second;
  }
  Status SetRetval(int index, const Tensor& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!retvals_.emplace(index, value).second) return errors::Internal("Retval[", index, "] has already been set");
    return Status::OK();
  }
  std::map<int, Tensor> TakeRetvals() { return std::move(retvals_); }

 private:
  const std::map<int, Tensor> args_;
  std::mutex mu_;
  std::map<int, Tensor> retvals_;  // guarded by mu_
};

}  // namespace

struct GraphMgr::Item {
  std::vector<std::unique_ptr<Executor>> executors;
};

GraphMgr::GraphMgr(std::shared_ptr<Server> local, std::string job, int task, std::shared_ptr<WorkerChannels> channels,
                   ThreadPool* pool)
    : local_(std::move(local)),
      job_(std::move(job)),
      task_(task),
      task_name_(TaskName(job_, task_)),
      channels_(std::move(channels)),
      pool_(pool) {}

GraphMgr::~GraphMgr() = default;

StatusOr<std::string> GraphMgr::Register(std::vector<std::pair<std::string, std::unique_ptr<Graph>>> partitions) {
  auto item = std::make_shared<Item>();
  for (auto& [device_name, graph] : partitions) {
    StatusOr<Device*> device = local_->devices()->Lookup(device_name);
    if (!device.ok() || (*device)->name() != device_name) {
      return errors::InvalidArgument(task_name_, " has no device '", device_name, "' to run a partition on");
    }
    ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                     CreatePartitionExecutor(std::move(graph), *device, local_->resources().get()));
    item->executors.push_back(std::move(executor));
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::string handle = StrCat(task_name_, "/graph:", ++last_handle_);
  items_.emplace(handle, std::move(item));
  return handle;
}

Status GraphMgr::Deregister(const std::string& handle) {
  std::shared_ptr<Item> item;  // destroyed outside the lock, after the steps that hold it
  std::lock_guard<std::mutex> lock(mu_);
  auto it = items_.find(handle);
  if (it == items_.end()) return errors::NotFound(task_name_, " has no graph '", handle, "'");
  item = std::move(it->second);
  items_.erase(it);
  return Status::OK();
}

Status GraphMgr::Run(const std::string& handle, int64_t step_id, std::map<int, Tensor> args,
                     const StepOptions& options, std::map<int, Tensor>* retvals) {
  std::shared_ptr<Item> item;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = items_.find(handle);
    if (it == items_.end()) {
      return errors::NotFound(task_name_, " has no graph '", handle, "': it was deregistered, or the task restarted");
    }
    item = it->second;
  }
  MapCallFrame frame(std::move(args));
  RemoteRendezvous rendezvous(local_->rendezvous()->Find(step_id), job_, task_, channels_, step_id, options.timeout);
  CancellationManager cancellation;
  std::vector<const Executor*> executors;
  for (const auto& e : item->executors) executors.push_back(e.get());
  StepRun run;
  run.step_id = step_id;
  run.call_frame = &frame;
  run.rendezvous = &rendezvous;
  run.cancellation = &cancellation;
  run.pool = pool_;
  run.timeout = options.timeout;
  run.abandoned = options.abandoned;
  RETURN_IF_ERROR(RunStep(executors, run));
  *retvals = frame.TakeRetvals();
  return Status::OK();
}

void GraphMgr::CleanupStep(int64_t step_id) { local_->rendezvous()->Cleanup(step_id); }

}  // namespace tessera
