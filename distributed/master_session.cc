#include "distributed/master_session.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <random>

#include "distributed/cluster_spec.h"
#include "distributed/protos/worker_service.grpc.pb.h"
#include "distributed/rpc_decode.h"
#include "distributed/rpc_util.h"
#include "graph/op_kinds.h"
#include "graph/platform/logging.h"
#include "graph/serialize/graph_json.h"
#include "graph/serialize/tensor_codec.h"
#include "placement/placer.h"
#include "runtime/device_factory.h"
#include "runtime/step_plan.h"

namespace tessera {
namespace {

// How long a control RPC (register, deregister, cleanup) may take.
constexpr std::chrono::milliseconds kControlTimeout(60000);
// How many ended steps of a task may wait for its next RunGraph to be cleaned up.
constexpr size_t kMaxDeferredCleanups = 16;
// How often discovery says which tasks it still waits for.
constexpr std::chrono::milliseconds kDiscoveryLogInterval(10000);
// A remote step's RPC outlives the step's own deadline by this much, so that the task's
// DeadlineExceeded, which names the node, comes back before the RPC's.
constexpr std::chrono::milliseconds kStepRpcGrace(5000);

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

// Asks the task at `address` for its devices, waiting up to `timeout` for it to come up
// (tasks start in any order) and saying every kDiscoveryLogInterval which task it waits for.
StatusOr<std::vector<RemoteDevice>> AskForDevices(rpc::WorkerService::Stub& stub, const WorkerChannels& channels,
                                                  const std::string& task, const std::string& address,
                                                  std::chrono::milliseconds timeout) {
  rpc::GetStatusResponse response;
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    auto context = channels.NewContext(std::min(left, kDiscoveryLogInterval));
    context->set_wait_for_ready(true);
    grpc::Status st = stub.GetStatus(context.get(), rpc::GetStatusRequest(), &response);
    if (st.ok()) break;
    if (st.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED || left <= kDiscoveryLogInterval) {
      return FromGrpc(st, task);
    }
    Log(LogSeverity::kInfo, StrCat("CreateSession still waiting for response from task: ", task));
  }
  if (response.task() != task) {
    return errors::FailedPrecondition("The cluster names ", address, " ", task, ", but the server there is ",
                                      response.task());
  }
  std::vector<RemoteDevice> devices;
  for (const rpc::DeviceAttributes& a : response.devices()) devices.push_back(DecodeDevice(a));
  return devices;
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

}  // namespace

// One task of the session: its GraphMgr when it is the master's own, its stub otherwise.
struct MasterSession::TaskClient {
  std::string name;
  std::shared_ptr<GraphMgr> local;
  std::shared_ptr<rpc::WorkerService::Stub> stub;
  std::shared_ptr<WorkerChannels> channels;

  StatusOr<std::string> Register(std::vector<std::pair<std::string, std::unique_ptr<Graph>>> parts) {
    if (local != nullptr) return local->Register(std::move(parts));
    rpc::RegisterGraphRequest request;
    for (auto& [device, graph] : parts) {
      rpc::PartitionGraph* p = request.add_partitions();
      p->set_device(device);
      p->set_graph_json(GraphDefToJson(graph->ToGraphDef()));
      graph.reset();
    }
    rpc::RegisterGraphResponse response;
    auto context = channels->NewContext(kControlTimeout);
    RETURN_IF_ERROR(FromGrpc(stub->RegisterGraph(context.get(), request, &response), name));
    return response.graph_handle();
  }

  void Deregister(const std::string& handle) {
    if (local != nullptr) {
      (void)local->Deregister(handle);
      return;
    }
    rpc::DeregisterGraphRequest request;
    request.set_graph_handle(handle);
    rpc::DeregisterGraphResponse response;
    auto context = channels->NewContext(std::chrono::milliseconds(5000));
    // Best effort: a task that is gone has nothing left to forget.
    (void)stub->DeregisterGraph(context.get(), request, &response);
  }

  // A step that ended well leaves its cleanup to ride on the task's next RunGraph rather
  // than cost a call of its own while the client waits. At most kMaxDeferredCleanups wait;
  // more go out on their own, as do those left when the session ends.
  void DeferCleanup(int64_t step_id) {
    if (local != nullptr) {
      local->CleanupStep(step_id);
      return;
    }
    std::vector<int64_t> overflow;
    {
      std::lock_guard<std::mutex> lock(cleanup_mu);
      deferred_cleanups.push_back(step_id);
      if (deferred_cleanups.size() >= kMaxDeferredCleanups) overflow.swap(deferred_cleanups);
    }
    CleanupSteps(std::move(overflow));
  }

  std::vector<int64_t> TakeDeferredCleanups() {
    std::lock_guard<std::mutex> lock(cleanup_mu);
    return std::exchange(deferred_cleanups, {});
  }

  // Fire and forget: nothing waits for a cleanup.
  void CleanupSteps(std::vector<int64_t> step_ids) {
    if (step_ids.empty()) return;
    if (local != nullptr) {
      for (int64_t id : step_ids) local->CleanupStep(id);
      return;
    }
    struct Call {
      std::shared_ptr<rpc::WorkerService::Stub> stub;
      std::unique_ptr<grpc::ClientContext> context;
      rpc::CleanupStepRequest request;
      rpc::CleanupStepResponse response;
    };
    auto* call = new Call{stub, channels->NewContext(kControlTimeout), {}, {}};
    call->request.mutable_step_ids()->Add(step_ids.begin(), step_ids.end());
    call->stub->async()->CleanupStep(call->context.get(), &call->request, &call->response,
                                     [call](const grpc::Status&) { delete call; });
  }

  std::mutex cleanup_mu;
  std::vector<int64_t> deferred_cleanups;  // guarded by cleanup_mu
};

// What one (feeds, fetches, targets) runs: per task, its registered graph and the indices
// of the feeds it takes and the fetches it gives.
struct MasterSession::Plan {
  struct Part {
    TaskClient* task = nullptr;
    std::string handle;
    std::vector<int> args;
  };
  std::vector<Part> parts;
  std::vector<SubgraphTensor> feeds;
  std::vector<SubgraphTensor> fetches;
};

StatusOr<std::unique_ptr<MasterSession>> MasterSession::Create(Environment env, const SessionConfig& config,
                                                               const GraphDef& def,
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
  DeviceSet device_set;
  for (const auto& [job, addresses] : s->env_.channels->cluster().jobs()) {
    for (int i = 0; i < static_cast<int>(addresses.size()); ++i) {
      if (!TaskWanted(filters, job, i)) continue;
      auto client = std::make_unique<TaskClient>();
      client->name = TaskName(job, i);
      client->channels = s->env_.channels;
      std::vector<RemoteDevice> found;
      if (client->name == own) {
        client->local = s->env_.local_graphs;
        for (const Device* d : s->env_.local->devices()->devices()) found.push_back(DescribeDevice(*d));
      } else {
        ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, s->env_.channels->ForTask(job, i));
        client->stub = rpc::WorkerService::NewStub(channel);
        ASSIGN_OR_RETURN(found,
                         AskForDevices(*client->stub, *s->env_.channels, client->name, addresses[i], discovery_timeout));
      }
      for (RemoteDevice& d : found) {
        ASSIGN_OR_RETURN(DeviceName parsed, DeviceName::Parse(d.name));
        if (!DeviceWanted(filters, parsed)) continue;
        RETURN_IF_ERROR(device_set.Add(d.name, DeviceFactory::Priority(d.device_type), d.physical_device_desc,
                                       client->local != nullptr));
        s->devices_.push_back(std::move(d));
      }
      s->tasks_.emplace(client->name, std::move(client));
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

  ASSIGN_OR_RETURN(s->graph_, Graph::FromGraphDef(def));
  Placer placer(s->graph_.get(), device_set, {.allow_soft_placement = config.allow_soft_placement});
  ASSIGN_OR_RETURN(s->placement_, placer.Run());
  return s;
}

MasterSession::~MasterSession() {
  for (const auto& [name, task] : tasks_) task->CleanupSteps(task->TakeDeferredCleanups());
  for (const auto& [key, plan] : plans_) {
    for (const Plan::Part& part : plan->parts) part.task->Deregister(part.handle);
  }
}

MasterSession::TaskClient* MasterSession::Client(const std::string& task) {
  auto it = tasks_.find(task);
  return it == tasks_.end() ? nullptr : it->second.get();
}

StatusOr<std::shared_ptr<const MasterSession::Plan>> MasterSession::GetOrCreatePlan(
    const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
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
  ASSIGN_OR_RETURN(StepPlan step, BuildStepPlan(*graph_, placement_, feed_names, fetches, targets, options));
  std::map<std::string, std::vector<std::pair<std::string, std::unique_ptr<Graph>>>> by_task;
  for (auto& [device, part] : step.partitions) by_task[part.task].emplace_back(device, std::move(part.graph));

  auto plan = std::make_shared<Plan>();
  plan->feeds = std::move(step.feeds);
  plan->fetches = std::move(step.fetches);
  Status status;
  for (auto& [task, parts] : by_task) {
    Plan::Part part;
    part.task = Client(task);
    if (part.task == nullptr) {
      status = errors::Internal("The graph was placed on ", task, ", which the session does not use");
      break;
    }
    StatusOr<std::vector<int>> args = ArgIndices(parts);
    if (!args.ok()) {
      status = args.status();
      break;
    }
    part.args = *std::move(args);
    StatusOr<std::string> handle = part.task->Register(std::move(parts));
    if (!handle.ok()) {
      status = Status(handle.status().code(),
                      StrCat("registering the step's graph on ", task, ": ", handle.status().message()));
      break;
    }
    part.handle = *std::move(handle);
    plan->parts.push_back(std::move(part));
  }
  if (!status.ok()) {
    for (const Plan::Part& part : plan->parts) part.task->Deregister(part.handle);
    return status;
  }
  auto [it, inserted] = plans_.emplace(key, std::move(plan));
  return it->second;
}

Status MasterSession::Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                          const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                          std::vector<Tensor>* outputs, const std::function<bool()>& abandoned) {
  ASSIGN_OR_RETURN(std::shared_ptr<const Plan> plan, GetOrCreatePlan(feeds, fetches, targets));
  for (size_t i = 0; i < feeds.size(); ++i) RETURN_IF_ERROR(CheckFeed(feeds[i].first, feeds[i].second, plan->feeds[i]));
  const int64_t step_id = RandomStepId();
  const std::chrono::milliseconds timeout(options.timeout_in_ms > 0 ? options.timeout_in_ms
                                                                    : config_.operation_timeout_in_ms);
  struct Step {
    std::mutex mu;
    std::condition_variable cv;
    size_t pending = 0;
    Status status;  // the first error, preferring a cause over the cancellations it caused
    std::vector<Tensor> fetched;
    std::vector<grpc::ClientContext*> contexts;  // the remote calls, cancelled on an error
    bool failed = false;
  } step;
  step.fetched.resize(fetches.size());
  // The calls' contexts live until every call is finished, so cancelling outside the lock
  // is safe even for a call that has just ended.
  auto finish = [&step](const Status& s, std::map<int, Tensor> retvals) {
    std::vector<grpc::ClientContext*> cancel;
    {
      std::lock_guard<std::mutex> lock(step.mu);
      for (auto& [index, value] : retvals) {
        if (index >= 0 && index < static_cast<int>(step.fetched.size())) step.fetched[index] = std::move(value);
      }
      if (!s.ok()) {
        if (step.status.ok() || (step.status.code() == Code::kCancelled && s.code() != Code::kCancelled)) {
          step.status = s;
        }
        // A task's Cancelled is the echo of an error elsewhere, which comes with its own call:
        // cancelling that call now would lose the cause.
        if (s.code() != Code::kCancelled) {
          if (!step.failed) cancel = step.contexts;
          step.failed = true;
        }
      }
    }
    for (grpc::ClientContext* c : cancel) c->TryCancel();
    std::lock_guard<std::mutex> lock(step.mu);
    if (--step.pending == 0) step.cv.notify_all();
  };

  struct RemoteCall {
    TaskClient* task = nullptr;
    std::unique_ptr<grpc::ClientContext> context;
    rpc::RunGraphRequest request;
    rpc::RunGraphResponse response;
  };
  std::vector<std::unique_ptr<RemoteCall>> calls;
  const Plan::Part* local = nullptr;
  step.pending = plan->parts.size();
  for (const Plan::Part& part : plan->parts) {
    if (part.task->local != nullptr) {
      local = &part;
      continue;
    }
    auto call = std::make_unique<RemoteCall>();
    call->task = part.task;
    call->context = part.task->channels->NewContext(timeout.count() > 0 ? timeout + kStepRpcGrace
                                                                        : std::chrono::milliseconds(0));
    call->request.set_graph_handle(part.handle);
    call->request.set_step_id(step_id);
    call->request.set_timeout_in_ms(timeout.count());
    Status encoded;
    for (int index : part.args) {
      StatusOr<std::string> bytes = EncodeTensor(feeds[index].second);
      if (!bytes.ok()) {
        encoded = Status(bytes.status().code(), StrCat("feed '", feeds[index].first, "': ", bytes.status().message()));
        break;
      }
      rpc::IndexedTensor* arg = call->request.add_args();
      arg->set_index(index);
      arg->set_tensor(std::move(*bytes));
    }
    if (!encoded.ok()) {
      finish(encoded, {});
      continue;
    }
    for (int64_t id : part.task->TakeDeferredCleanups()) call->request.add_cleanup_step_ids(id);
    {
      std::lock_guard<std::mutex> lock(step.mu);
      step.contexts.push_back(call->context.get());
      if (step.failed) call->context->TryCancel();
    }
    RemoteCall* raw = call.get();
    const std::string task = part.task->name;
    part.task->stub->async()->RunGraph(raw->context.get(), &raw->request, &raw->response,
                                       [raw, task, &finish](const grpc::Status& st) {
                                         Status s = FromGrpc(st, task);
                                         std::map<int, Tensor> retvals;
                                         for (const rpc::IndexedTensor& r : raw->response.retvals()) {
                                           if (!s.ok()) break;
                                           StatusOr<Tensor> t = DecodeTensor(r.tensor());
                                           if (!t.ok()) s = t.status();
                                           else retvals[r.index()] = *std::move(t);
                                         }
                                         finish(s, std::move(retvals));
                                       });
    calls.push_back(std::move(call));
  }
  if (local != nullptr) {
    std::map<int, Tensor> args;
    for (int index : local->args) args[index] = feeds[index].second;
    std::map<int, Tensor> retvals;
    GraphMgr::StepOptions step_options;
    step_options.timeout = timeout;
    step_options.abandoned = [&step, &abandoned] {
      if (abandoned != nullptr && abandoned()) return true;
      std::lock_guard<std::mutex> lock(step.mu);
      return step.failed;
    };
    Status s = local->task->local->Run(local->handle, step_id, std::move(args), step_options, &retvals);
    finish(s, std::move(retvals));
  }
  {
    std::unique_lock<std::mutex> lock(step.mu);
    while (step.pending > 0) {
      if (abandoned == nullptr) {
        step.cv.wait(lock);
        continue;
      }
      step.cv.wait_for(lock, std::chrono::milliseconds(50));
      if (step.pending > 0 && !step.failed && abandoned()) {
        // The client went away: the remote tasks stop too, rather than run a step nobody waits for.
        if (step.status.ok()) step.status = errors::Cancelled("the client cancelled the step");
        step.failed = true;
        for (grpc::ClientContext* c : step.contexts) c->TryCancel();
      }
    }
  }
  if (step.status.ok()) {
    for (const Plan::Part& part : plan->parts) part.task->DeferCleanup(step_id);
  } else {
    // A failed step may have left tensors behind: they go now, with the cleanups that its
    // calls carried, which a task that never ran the call did not see.
    if (local != nullptr) local->task->CleanupSteps({step_id});
    for (const auto& call : calls) {
      std::vector<int64_t> ids(call->request.cleanup_step_ids().begin(), call->request.cleanup_step_ids().end());
      ids.push_back(step_id);
      call->task->CleanupSteps(std::move(ids));
    }
  }
  RETURN_IF_ERROR(step.status);
  if (outputs != nullptr) *outputs = std::move(step.fetched);
  return Status::OK();
}

}  // namespace tessera
