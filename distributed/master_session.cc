#include "distributed/master_session.h"

#include <condition_variable>
#include <random>

#include "devices/device_factory.h"
#include "distributed/cluster_spec.h"
#include "distributed/grpc_worker.h"
#include "distributed/local_worker.h"
#include "graph/device_name.h"
#include "graph/op_kinds.h"
#include "graph/platform/logging.h"
#include "placement/extend_graph.h"
#include "placement/placer.h"
#include "runtime/step_plan.h"

namespace tessera {
namespace {

// Step ids of masters are random in [2^62, 2^63): they cannot meet the small counters of
// sessions in the tasks' own processes (NewStepId), nor, but by a chance of 2^-62 per pair,
// another master's.
int64_t RandomStepId() {
  static std::mutex mu;
  static std::mt19937_64 bits{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  return static_cast<int64_t>((bits() >> 2) | (uint64_t{1} << 62));
}

// Whether a filter could match some device of the task: its job, replica and task fields.
bool TaskWanted(const std::vector<DeviceName>& filters, const std::string& job, int task) {
  if (filters.empty()) return true;
  DeviceName name;
  name.has_job = name.has_replica = name.has_task = true;
  name.job = job;
  name.task = task;
  for (DeviceName f : filters) {
    f.has_type = f.has_id = false;
    if (f.Matches(name)) return true;
  }
  return false;
}

bool DeviceWanted(const std::vector<DeviceName>& filters, const DeviceName& device) {
  if (filters.empty()) return true;
  for (const DeviceName& f : filters) {
    if (f.Matches(device)) return true;
  }
  return false;
}

// The _Arg indices of a task's partitions: the feeds it takes.
StatusOr<std::vector<int>> ArgIndices(const std::vector<std::pair<std::string, std::unique_ptr<Graph>>>& parts) {
  std::vector<int> out;
  for (const auto& [device, graph] : parts) {
    for (const Node* n : graph->nodes()) {
      if (!IsArg(n->op())) continue;
      int64_t index = 0;
      RETURN_IF_ERROR(n->GetAttr("index", &index));
      out.push_back(static_cast<int>(index));
    }
  }
  return out;
}

// One step's calls to its tasks: they end in any order, the first error (preferring a cause
// over the cancellations it caused) cancels the others, and the step ends when all have.
class StepCalls {
 public:
  StepCalls(size_t calls, size_t fetches) : pending_(calls) { fetched_.resize(fetches); }

  void Add(std::unique_ptr<RunGraphCall> call) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_) call->Cancel();
    calls_.push_back(std::move(call));
  }

  // A call's end. A task's Cancelled is the echo of an error elsewhere, which comes with its
  // own call: cancelling that call now would lose the cause.
  void Finish(const Status& s, std::map<int, Tensor> retvals) {
    std::vector<RunGraphCall*> cancel;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [index, value] : retvals) {
        if (index >= 0 && index < static_cast<int>(fetched_.size())) fetched_[index] = std::move(value);
      }
      if (!s.ok()) {
        if (status_.ok() || (status_.code() == Code::kCancelled && s.code() != Code::kCancelled)) status_ = s;
        if (s.code() != Code::kCancelled) cancel = Fail();
      }
    }
    for (RunGraphCall* c : cancel) c->Cancel();
    std::lock_guard<std::mutex> lock(mu_);
    if (--pending_ == 0) done_.notify_all();
  }

  bool failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_;
  }

  // Until every call has ended; `abandoned` (may be null), polled meanwhile, cancels them.
  Status Wait(const std::function<bool()>& abandoned) {
    std::unique_lock<std::mutex> lock(mu_);
    while (pending_ > 0) {
      if (abandoned == nullptr) {
        done_.wait(lock);
        continue;
      }
      done_.wait_for(lock, std::chrono::milliseconds(50));
      if (pending_ > 0 && !failed_ && abandoned()) {
        // The client went away: the tasks stop too, rather than run a step nobody waits for.
        if (status_.ok()) status_ = errors::Cancelled("the client cancelled the step");
        std::vector<RunGraphCall*> cancel = Fail();
        lock.unlock();
        for (RunGraphCall* c : cancel) c->Cancel();
        lock.lock();
      }
    }
    return status_;
  }

  std::vector<Tensor> TakeFetched() { return std::move(fetched_); }

 private:
  // Marks the step failed, returning the calls to cancel (outside mu_); their handles live
  // as long as this object, so that is safe even for a call that has just ended.
  std::vector<RunGraphCall*> Fail() {
    if (failed_) return {};
    failed_ = true;
    std::vector<RunGraphCall*> calls;
    for (const auto& c : calls_) calls.push_back(c.get());
    return calls;
  }

  std::mutex mu_;
  std::condition_variable done_;
  size_t pending_;                                    // guarded by mu_
  Status status_;                                     // guarded by mu_
  bool failed_ = false;                               // guarded by mu_
  std::vector<Tensor> fetched_;                       // guarded by mu_
  std::vector<std::unique_ptr<RunGraphCall>> calls_;  // guarded by mu_
};

StatusOr<std::unique_ptr<WorkerInterface>> DefaultWorker(const MasterSession::Environment& env, const std::string& job,
                                                         int task) {
  const std::string name = TaskName(job, task);
  if (job == env.job && task == env.task) {
    return std::unique_ptr<WorkerInterface>(std::make_unique<LocalWorker>(name, env.local, env.local_graphs));
  }
  ASSIGN_OR_RETURN(std::string address, env.channels->cluster().TaskAddress(job, task));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, env.channels->ForTask(job, task));
  return std::unique_ptr<WorkerInterface>(
      std::make_unique<GrpcWorker>(name, std::move(address), std::move(channel), env.channels));
}

}  // namespace

// What one (feeds, fetches, targets) runs: per task, its registered graph and the indices
// of the feeds it takes.
struct MasterSession::Plan {
  struct Part {
    WorkerInterface* worker = nullptr;
    std::string handle;
    std::vector<int> args;
  };
  std::vector<Part> parts;  // the master's own task last: it runs on the calling thread
  std::vector<SubgraphTensor> feeds;
  std::vector<SubgraphTensor> fetches;
};

StatusOr<std::unique_ptr<MasterSession>> MasterSession::Create(Environment env, const SessionConfig& config,
                                                               const GraphSpec& def,
                                                               std::chrono::milliseconds discovery_timeout) {
  std::unique_ptr<MasterSession> s(new MasterSession());
  s->env_ = std::move(env);
  s->config_ = config;
  std::vector<DeviceName> filters;
  for (const std::string& f : config.device_filters) {
    ASSIGN_OR_RETURN(DeviceName parsed, DeviceName::Parse(f));
    filters.push_back(parsed);
  }
  const std::string own = TaskName(s->env_.job, s->env_.task);
  DeviceSet& device_set = s->device_set_;
  for (const auto& [job, addresses] : s->env_.channels->cluster().jobs()) {
    for (int i = 0; i < static_cast<int>(addresses.size()); ++i) {
      if (!TaskWanted(filters, job, i)) continue;
      const std::string name = TaskName(job, i);
      ASSIGN_OR_RETURN(std::unique_ptr<WorkerInterface> worker,
                       s->env_.new_worker != nullptr ? s->env_.new_worker(job, i) : DefaultWorker(s->env_, job, i));
      ASSIGN_OR_RETURN(std::vector<RemoteDevice> found, worker->GetDevices(discovery_timeout));
      for (RemoteDevice& d : found) {
        ASSIGN_OR_RETURN(DeviceName parsed, DeviceName::Parse(d.name));
        if (!DeviceWanted(filters, parsed)) continue;
        RETURN_IF_ERROR(device_set.Add(d.name, DeviceFactory::Priority(d.device_type), d.physical_device_desc,
                                       name == own));
        s->devices_.push_back(std::move(d));
      }
      s->tasks_.emplace(name, std::move(worker));
    }
  }
  if (device_set.devices().empty()) {
    return errors::InvalidArgument("No device of the cluster passes the session's device_filters");
  }
  // devices_ in placement order, as the log lists them.
  std::map<std::string, RemoteDevice> by_name;
  for (RemoteDevice& d : s->devices_) by_name.emplace(d.name, std::move(d));
  s->devices_.clear();
  for (const DeviceDescription& d : device_set.devices()) s->devices_.push_back(std::move(by_name.at(d.name)));

  ASSIGN_OR_RETURN(s->graph_, Graph::FromSpec(def));
  Placer placer(s->graph_.get(), device_set, {.allow_soft_placement = config.allow_soft_placement});
  ASSIGN_OR_RETURN(s->placement_, placer.Run());
  return s;
}

Status MasterSession::Extend(const GraphSpec& more) {
  std::lock_guard<std::shared_mutex> lock(graph_mu_);
  ASSIGN_OR_RETURN(PlacedGraph grown, ExtendPlacedGraph(*graph_, placement_, more, device_set_,
                                                        {.allow_soft_placement = config_.allow_soft_placement}));
  graph_ = std::move(grown.graph);
  placement_ = std::move(grown.placement);
  return Status::OK();
}

std::vector<PlacementRecord> MasterSession::placement() const {
  std::shared_lock<std::shared_mutex> lock(graph_mu_);
  return placement_;
}

// The workers go after their graphs, sending the cleanups they still defer.
MasterSession::~MasterSession() {
  for (const auto& [key, plan] : plans_) {
    for (const Plan::Part& part : plan->parts) part.worker->DeregisterGraph(part.handle);
  }
}

StatusOr<std::shared_ptr<const MasterSession::Plan>> MasterSession::GetOrCreatePlan(
    const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets, std::chrono::milliseconds timeout) {
  const std::string key = StepSignature(feeds, fetches, targets);
  std::lock_guard<std::mutex> lock(plans_mu_);  // one registration at a time: they are rare
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second;

  std::vector<std::string> feed_names;
  for (const auto& f : feeds) feed_names.push_back(f.first);
  std::map<std::string, uint64_t> incarnations;
  for (const RemoteDevice& d : devices_) incarnations[d.name] = d.incarnation;
  StepPlanOptions options;
  // The same rewrites as a local session's, so a cluster computes what one process does.
  options.rewrites = RewriteOptionsOf(config_);
  options.incarnation = [&incarnations](const std::string& device) {
    auto it = incarnations.find(device);
    return it == incarnations.end() ? uint64_t{0} : it->second;
  };
  options.host = [this](const std::string& device) {
    StatusOr<DeviceName> name = DeviceName::Parse(device);
    return name.ok() ? env_.channels->cluster().TaskHost(name->job, name->task) : std::string();
  };
  options.collective_timeout = std::chrono::milliseconds(config_.operation_timeout_in_ms);
  StatusOr<StepPlan> built = [&] {
    std::shared_lock<std::shared_mutex> graph_lock(graph_mu_);
    return BuildStepPlan(*graph_, placement_, feed_names, fetches, targets, options);
  }();
  if (!built.ok()) return built.status();
  StepPlan step = std::move(*built);
  ASSIGN_OR_RETURN(std::shared_ptr<const Plan> plan, Register(std::move(step), timeout));
  return plans_.emplace(key, std::move(plan)).first->second;
}

StatusOr<std::shared_ptr<const MasterSession::Plan>> MasterSession::Register(StepPlan step, std::chrono::milliseconds timeout) {
  std::map<std::string, std::vector<std::pair<std::string, std::unique_ptr<Graph>>>> by_task;
  for (auto& [device, part] : step.partitions) by_task[part.task].emplace_back(device, std::move(part.graph));
  auto plan = std::make_shared<Plan>();
  plan->feeds = std::move(step.feeds);
  plan->fetches = std::move(step.fetches);
  Status status;
  for (auto& [task, parts] : by_task) {
    auto worker = tasks_.find(task);
    if (worker == tasks_.end()) {
      status = errors::Internal("The graph was placed on ", task, ", which the session does not use");
      break;
    }
    Plan::Part part{worker->second.get(), "", {}};
    StatusOr<std::vector<int>> args = ArgIndices(parts);
    StatusOr<std::string> handle = args.ok() ? part.worker->RegisterGraph(std::move(parts), timeout) : args.status();
    if (!handle.ok()) {
      status = Status(handle.status().code(),
                      StrCat("registering the step's graph on ", task, ": ", handle.status().message()));
      break;
    }
    part.args = *std::move(args);
    part.handle = *std::move(handle);
    plan->parts.push_back(std::move(part));
  }
  if (!status.ok()) {
    for (const Plan::Part& part : plan->parts) part.worker->DeregisterGraph(part.handle);
    return status;
  }
  // The master's own task runs its part on the calling thread, after the others have started.
  const std::string own = TaskName(env_.job, env_.task);
  std::stable_partition(plan->parts.begin(), plan->parts.end(),
                        [&own](const Plan::Part& p) { return p.worker->task() != own; });
  return std::shared_ptr<const Plan>(std::move(plan));
}

Status MasterSession::Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                          const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                          std::vector<Tensor>* outputs, const std::function<bool()>& abandoned) {
  const std::chrono::milliseconds timeout(options.timeout_in_ms > 0 ? options.timeout_in_ms
                                                                    : config_.operation_timeout_in_ms);
  ASSIGN_OR_RETURN(std::shared_ptr<const Plan> plan, GetOrCreatePlan(feeds, fetches, targets, timeout));
  for (size_t i = 0; i < feeds.size(); ++i) RETURN_IF_ERROR(CheckFeed(feeds[i].first, feeds[i].second, plan->feeds[i]));
  const int64_t step_id = RandomStepId();
  StepCalls calls(plan->parts.size(), fetches.size());
  for (const Plan::Part& part : plan->parts) {
    RunGraphRequest request;
    request.handle = part.handle;
    request.step_id = step_id;
    request.timeout = timeout;
    for (int index : part.args) {
      request.args[index] = feeds[index].second;
      request.names[index] = feeds[index].first;
    }
    request.abandoned = [&calls, &abandoned] { return (abandoned != nullptr && abandoned()) || calls.failed(); };
    calls.Add(part.worker->RunGraphAsync(std::move(request), [&calls](const Status& s, std::map<int, Tensor> retvals) {
      calls.Finish(s, std::move(retvals));
    }));
  }
  const Status status = calls.Wait(abandoned);
  // A failed step may have left tensors behind: they go now.
  for (const Plan::Part& part : plan->parts) {
    if (status.ok()) {
      part.worker->DeferCleanup(step_id);
    } else {
      part.worker->CleanupSteps({step_id});
    }
  }
  RETURN_IF_ERROR(status);
  if (outputs != nullptr) *outputs = calls.TakeFetched();
  return Status::OK();
}

}  // namespace tessera
