#include "runtime/direct_session.h"

#include <chrono>
#include <memory>
#include <thread>

#include "graph/op_kinds.h"
#include "graph/platform/logging.h"
#include "kernels/kernel_registry.h"
#include "kernels/vector_call_frame.h"
#include "placement/extend_graph.h"
#include "placement/placer.h"
#include "runtime/executor.h"
#include "runtime/run_step.h"
#include "runtime/server.h"
#include "runtime/step_capture.h"
#include "runtime/step_plan.h"

namespace tessera {
namespace {

std::vector<DeviceAllocationStats> AllocationStats(const DeviceMgr& devices) {
  std::vector<DeviceAllocationStats> out;
  auto add = [&out](const Device& d, const Allocator& a, int64_t limit) {
    const AllocatorStats s = a.stats();
    out.push_back({d.name(), std::string(a.name()), s.bytes_in_use, s.peak_bytes_in_use, s.num_allocs, limit});
  };
  for (const Device* d : devices.devices()) {
    add(*d, *d->allocator(), d->attributes().memory_limit);
    if (d->host_allocator() != d->allocator()) add(*d, *d->host_allocator(), 0);
  }
  return out;
}

int ResolveThreads(int requested) {
  if (requested > 0) return requested;
  int n = static_cast<int>(std::thread::hardware_concurrency());
  return n > 0 ? n : 1;
}

// Process-wide pools shared by sessions that do not ask for their own, one per size.
// Never destroyed: sessions may be torn down in any order at exit.
StatusOr<ThreadPool*> SharedPool(const char* name, int threads) {
  static std::mutex mu;
  static auto* pools = new std::map<std::pair<std::string, int>, std::unique_ptr<ThreadPool>>;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*pools)[{name, threads}];
  if (slot == nullptr) {
    StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(name, threads);
    if (!pool.ok()) {
      pools->erase({name, threads});
      return pool.status();
    }
    slot = std::move(*pool);
  }
  return slot.get();
}

}  // namespace

struct DirectSession::ExecutorAndKeys {
  // One per device the step touches; they meet in the step's rendezvous.
  std::vector<std::unique_ptr<Executor>> executors;
  // Several devices, or one device handing a tensor between its host and device memory.
  bool needs_rendezvous = false;
  std::vector<SubgraphTensor> feeds;
  std::vector<SubgraphTensor> fetches;
  std::vector<PlacementRecord> placement;
  // gpu_options.capture_steps: how a step of one GPU partition is recorded and replayed.
  std::unique_ptr<StepCapture> capture;
};

DirectSession::~DirectSession() = default;

// What one node costs a session in host memory, rounded up from measurement: its Node in
// the session's graph and in an executor's, its kernel, its placement record and its edges
// came to 2.8 KiB a node on a chain of a million Identity nodes.
constexpr int64_t kHostBytesPerNode = 4096;

StatusOr<std::unique_ptr<DirectSession>> DirectSession::Create(const SessionConfig& config, const GraphSpec& def,
                                                               Environment environment) {
  const int64_t limit = config.HostMemoryLimitBytes();
  if (static_cast<int64_t>(def.nodes.size()) > limit / kHostBytesPerNode) {
    return errors::ResourceExhausted("A graph of ", def.nodes.size(), " nodes needs about ",
                                     static_cast<int64_t>(def.nodes.size()) * kHostBytesPerNode >> 20,
                                     " MiB of host memory, more than the session's limit of ", limit >> 20,
                                     " MiB (host_memory_limit_mb)");
  }
  std::unique_ptr<DirectSession> s(new DirectSession());
  s->config_ = config;
  int inter = ResolveThreads(config.inter_op_parallelism_threads);
  int intra = ResolveThreads(config.intra_op_parallelism_threads);
  if (config.use_per_session_threads) {
    ASSIGN_OR_RETURN(s->own_inter_op_pool_, ThreadPool::Create("inter_op", inter));
    ASSIGN_OR_RETURN(s->own_intra_op_pool_, ThreadPool::Create("intra_op", intra));
    s->inter_op_pool_ = s->own_inter_op_pool_.get();
    s->intra_op_pool_ = s->own_intra_op_pool_.get();
  } else {
    ASSIGN_OR_RETURN(s->inter_op_pool_, SharedPool("inter_op", inter));
    ASSIGN_OR_RETURN(s->intra_op_pool_, SharedPool("intra_op", intra));
  }
  s->devices_ = std::move(environment.devices);
  if (s->devices_ == nullptr) {
    ASSIGN_OR_RETURN(s->devices_, DeviceMgr::CreateLocal(config.device_count, s->intra_op_pool_, limit, config.gpu_options));
  }
  s->resource_mgr_ = environment.resources != nullptr ? std::move(environment.resources)
                                                      : std::make_shared<ResourceMgr>();
  s->rendezvous_mgr_ = environment.rendezvous != nullptr ? std::move(environment.rendezvous)
                                                         : std::make_shared<IntraProcessRendezvousMgr>();
  ASSIGN_OR_RETURN(s->graph_, Graph::FromSpec(def));
  DeviceSet device_set = s->devices_->AsDeviceSet();
  Placer placer(s->graph_.get(), device_set,
                {.allow_soft_placement = config.allow_soft_placement,
                 .log_device_placement = config.log_device_placement});
  ASSIGN_OR_RETURN(s->placement_, placer.Run());
  return s;
}

int DirectSession::inter_op_threads() const { return inter_op_pool_->NumThreads(); }
int DirectSession::intra_op_threads() const { return intra_op_pool_->NumThreads(); }

void DirectSession::Reset(const std::vector<std::string>& containers) { resource_mgr_->Cleanup(containers); }

Status DirectSession::Extend(const GraphSpec& more) {
  std::lock_guard<std::shared_mutex> lock(graph_mu_);
  const int64_t nodes = graph_->num_nodes() + static_cast<int64_t>(more.nodes.size());
  if (nodes > config_.HostMemoryLimitBytes() / kHostBytesPerNode) {
    return errors::ResourceExhausted("Session::Extend: a graph of ", nodes, " nodes is more than the ",
                                     "session's host memory limit holds (host_memory_limit_mb)");
  }
  const DeviceSet device_set = devices_->AsDeviceSet();  // the placer keeps a reference
  ASSIGN_OR_RETURN(PlacedGraph grown,
                   ExtendPlacedGraph(*graph_, placement_, more, device_set,
                                     {.allow_soft_placement = config_.allow_soft_placement,
                                      .log_device_placement = config_.log_device_placement}));
  graph_ = std::move(grown.graph);
  placement_ = std::move(grown.placement);
  return Status::OK();
}

namespace {

// "": a session of its own; "local://<n>": a session on that in-process Server.
class DirectSessionFactory final : public SessionFactory {
 public:
  StatusOr<std::unique_ptr<Session>> NewSession(const std::string& target, const SessionConfig& config,
                                                const GraphSpec& graph) override {
    DirectSession::Environment environment;
    if (!target.empty()) {
      ASSIGN_OR_RETURN(std::shared_ptr<Server> server, Server::Find(target));
      environment = {server->devices(), server->resources(), server->rendezvous()};
    }
    ASSIGN_OR_RETURN(std::unique_ptr<DirectSession> session, DirectSession::Create(config, graph, environment));
    return std::unique_ptr<Session>(std::move(session));
  }
  Status Reset(const std::string& target, const std::vector<std::string>& containers) override {
    ASSIGN_OR_RETURN(std::shared_ptr<Server> server, Server::Find(target));
    server->resources()->Cleanup(containers);
    return Status::OK();
  }
};

}  // namespace

std::shared_ptr<SessionFactory> DirectSession::Factory() {
  static auto* factory = new std::shared_ptr<SessionFactory>(std::make_shared<DirectSessionFactory>());
  return *factory;
}

StatusOr<std::shared_ptr<const DirectSession::ExecutorAndKeys>> DirectSession::GetOrCreateExecutor(
    const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  std::string key = StepSignature(feeds, fetches, targets);
  {
    std::lock_guard<std::mutex> lock(executors_mu_);
    auto it = executors_.find(key);
    if (it != executors_.end()) return it->second;
  }
  std::vector<std::string> feed_names;
  for (const auto& f : feeds) feed_names.push_back(f.first);
  StepPlanOptions options;
  options.rewrites = RewriteOptionsOf(config_);
  options.incarnation = [this](const std::string& device) { return devices_->IncarnationOf(device); };
  // A plan made from the graph before an Extend stays right after it: new nodes feed none
  // of the old ones.
  std::shared_lock<std::shared_mutex> graph_lock(graph_mu_);
  ASSIGN_OR_RETURN(StepPlan plan, BuildStepPlan(*graph_, placement_, feed_names, fetches, targets, options));
  graph_lock.unlock();
  auto ek = std::make_shared<ExecutorAndKeys>();
  ek->feeds = std::move(plan.feeds);
  ek->fetches = std::move(plan.fetches);
  ek->placement = std::move(plan.placement);
  ek->needs_rendezvous = plan.partitions.size() > 1;
  Device* device = nullptr;  // the last partition's
  for (auto& [device_name, part] : plan.partitions) {
    for (const Node* n : part.graph->nodes()) ek->needs_rendezvous |= IsSend(n->op()) || IsRecv(n->op());
    ASSIGN_OR_RETURN(device, devices_->Lookup(device_name));
    ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                     CreatePartitionExecutor(std::move(part.graph), device, resource_mgr_.get()));
    ek->executors.push_back(std::move(executor));
  }
  if (config_.gpu_options.capture_steps && ek->executors.size() == 1 && device->device_type() == kDeviceGpu) {
    const Graph& partition = ek->executors[0]->graph();
    const std::string blocker = CaptureBlocker(partition);
    if (blocker.empty()) {
      ek->capture = std::make_unique<StepCapture>(key, device, resource_mgr_.get(), partition);
    } else {
      Log(LogSeverity::kInfo, StrCat("Step capture on ", device->name(), " (", key, "): not recorded, ", blocker));
    }
  }
  std::lock_guard<std::mutex> lock(executors_mu_);
  auto [it, inserted] = executors_.emplace(std::move(key), std::move(ek));
  return it->second;
}

Status DirectSession::Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                    const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                    std::vector<Tensor>* outputs, RunMetadata* metadata) {
  ASSIGN_OR_RETURN(std::shared_ptr<const ExecutorAndKeys> ek,
                   GetOrCreateExecutor(feeds, fetches, targets));
  for (size_t i = 0; i < feeds.size(); ++i) RETURN_IF_ERROR(CheckFeed(feeds[i].first, feeds[i].second, ek->feeds[i]));

  std::vector<Tensor> feed_values;
  for (const auto& feed : feeds) feed_values.push_back(feed.second);
  VectorCallFrame frame(std::move(feed_values), fetches.size());
  // Shared with the callback a caller's manager holds, which may run after the step ends.
  auto cancellation = std::make_shared<CancellationManager>();
  CancellationManager::Token link = 0;
  if (options.cancellation != nullptr) {
    link = options.cancellation->NewToken();
    if (!options.cancellation->RegisterCallback(link, [cancellation] { cancellation->StartCancel(); })) {
      return errors::Cancelled("Step was cancelled before it started");
    }
  }
  {
    std::lock_guard<std::mutex> lock(steps_mu_);
    if (closed_) {
      if (options.cancellation != nullptr) options.cancellation->DeregisterCallback(link);
      return errors::Cancelled("Session has been closed.");
    }
    steps_.insert(cancellation.get());
  }
  const int64_t step_id = NewStepId();
  std::shared_ptr<Rendezvous> rendezvous = ek->needs_rendezvous ? rendezvous_mgr_->Find(step_id) : nullptr;
  const bool trace = metadata != nullptr && options.trace_level == RunOptions::TraceLevel::kFullTrace;
  std::vector<NodeExecStats> stats;
  StepRun run;
  run.step_id = step_id;
  run.call_frame = &frame;
  run.rendezvous = rendezvous.get();
  run.cancellation = cancellation.get();
  run.pool = inter_op_pool_;
  run.timeout = std::chrono::milliseconds(options.timeout_in_ms > 0 ? options.timeout_in_ms
                                                                    : config_.operation_timeout_in_ms);
  run.stats = trace ? &stats : nullptr;
  std::vector<const Executor*> executors;
  for (const auto& e : ek->executors) executors.push_back(e.get());
  Status status;
  if (ek->capture != nullptr && !trace) {
    status = ek->capture->Run(recording_mu_, &frame, [&] { return RunStep(executors, run); },
                              [&](CallFrame* fixed) {
                                StepRun replay = run;
                                replay.call_frame = fixed;
                                replay.pool = nullptr;
                                replay.timeout = std::chrono::milliseconds(0);
                                return RunStep(executors, replay);
                              });
  } else if (config_.gpu_options.capture_steps) {
    std::shared_lock<std::shared_mutex> not_while_recording(recording_mu_);
    status = RunStep(executors, run);
  } else {
    status = RunStep(executors, run);
  }
  {
    std::lock_guard<std::mutex> lock(steps_mu_);
    steps_.erase(cancellation.get());
  }
  if (options.cancellation != nullptr) options.cancellation->DeregisterCallback(link);
  if (rendezvous != nullptr) rendezvous_mgr_->Cleanup(step_id);
  if (metadata != nullptr) FillMetadata(*ek, options, std::move(stats), metadata);
  RETURN_IF_ERROR(status);
  if (outputs != nullptr) *outputs = std::move(frame.retvals());
  return Status::OK();
}

void DirectSession::FillMetadata(const ExecutorAndKeys& ek, const RunOptions& options,
                                 std::vector<NodeExecStats> stats, RunMetadata* metadata) const {
  metadata->placement = ek.placement;
  metadata->step_stats = std::move(stats);
  metadata->allocation_stats = AllocationStats(*devices_);
  metadata->partition_graphs.clear();
  if (options.output_partition_graphs) {
    for (const auto& executor : ek.executors) metadata->partition_graphs.push_back(executor->graph().ToSpec());
  }
}

void DirectSession::Close() {
  std::lock_guard<std::mutex> lock(steps_mu_);
  closed_ = true;
  for (CancellationManager* step : steps_) step->StartCancel();
}

}  // namespace tessera
