#include "runtime/session.h"

#include <chrono>
#include <condition_variable>
#include <optional>
#include <thread>

#include "placement/placer.h"
#include "runtime/deadline.h"
#include "runtime/intra_process_rendezvous.h"
#include "runtime/local_function_runtime.h"
#include "runtime/partition.h"
#include "runtime/server.h"
#include "runtime/subgraph.h"

namespace tessera {
namespace {

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

class VectorCallFrame : public CallFrame {
 public:
  VectorCallFrame(const std::vector<std::pair<std::string, Tensor>>& feeds, size_t num_fetches)
      : feeds_(feeds), retvals_(num_fetches) {}
  StatusOr<Tensor> GetArg(int index) const override { return feeds_[index].second; }
  Status SetRetval(int index, const Tensor& value) override {
    retvals_[index] = value;
    return Status::OK();
  }
  std::vector<Tensor>& retvals() { return retvals_; }

 private:
  const std::vector<std::pair<std::string, Tensor>>& feeds_;
  std::vector<Tensor> retvals_;
};

}  // namespace

struct Session::ExecutorAndKeys {
  // One per device the step touches; they meet in the step's rendezvous.
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<SubgraphTensor> feeds;
  std::vector<SubgraphTensor> fetches;
  std::vector<PlacementRecord> placement;
};

Session::~Session() = default;

StatusOr<std::unique_ptr<Session>> Session::Create(const SessionConfig& config, const GraphDef& def) {
  return Create("", config, def);
}

// What one node costs a session in host memory, rounded up from measurement: its Node in
// the session's graph and in an executor's, its kernel, its placement record and its edges
// came to 2.8 KiB a node on a chain of a million Identity nodes.
constexpr int64_t kHostBytesPerNode = 4096;

StatusOr<std::unique_ptr<Session>> Session::Create(const std::string& target, const SessionConfig& config,
                                                   const GraphDef& def) {
  const int64_t limit = config.HostMemoryLimitBytes();
  if (static_cast<int64_t>(def.nodes.size()) > limit / kHostBytesPerNode) {
    return errors::ResourceExhausted("A graph of ", def.nodes.size(), " nodes needs about ",
                                     static_cast<int64_t>(def.nodes.size()) * kHostBytesPerNode >> 20,
                                     " MiB of host memory, more than the session's limit of ", limit >> 20,
                                     " MiB (host_memory_limit_mb)");
  }
  std::shared_ptr<Server> server;
  if (!target.empty()) {
    ASSIGN_OR_RETURN(server, Server::Find(target));
  }
  std::unique_ptr<Session> s(new Session());
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
  if (server != nullptr) {
    s->devices_ = server->devices();
    s->resource_mgr_ = server->resources();
  } else {
    ASSIGN_OR_RETURN(s->devices_, DeviceMgr::CreateLocal(config.device_count, s->intra_op_pool_, limit));
    s->resource_mgr_ = std::make_shared<ResourceMgr>();
  }
  ASSIGN_OR_RETURN(s->graph_, Graph::FromGraphDef(def));
  DeviceSet device_set = s->devices_->AsDeviceSet();
  Placer placer(s->graph_.get(), device_set,
                {.allow_soft_placement = config.allow_soft_placement,
                 .log_device_placement = config.log_device_placement});
  ASSIGN_OR_RETURN(s->placement_, placer.Run());
  return s;
}

int Session::inter_op_threads() const { return inter_op_pool_->NumThreads(); }
int Session::intra_op_threads() const { return intra_op_pool_->NumThreads(); }

void Session::Reset(const std::vector<std::string>& containers) { resource_mgr_->Cleanup(containers); }

Status Session::Reset(const std::string& target, const std::vector<std::string>& containers) {
  ASSIGN_OR_RETURN(std::shared_ptr<Server> server, Server::Find(target));
  server->resources()->Cleanup(containers);
  return Status::OK();
}

StatusOr<std::shared_ptr<const Session::ExecutorAndKeys>> Session::GetOrCreateExecutor(
    const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  std::string key;
  for (const auto& f : feeds) key.append(f.first).push_back(',');
  key.push_back('>');
  for (const auto& f : fetches) key.append(f).push_back(',');
  key.push_back('>');
  for (const auto& t : targets) key.append(t).push_back(',');
  {
    std::lock_guard<std::mutex> lock(executors_mu_);
    auto it = executors_.find(key);
    if (it != executors_.end()) return it->second;
  }
  std::vector<std::string> feed_names;
  for (const auto& f : feeds) feed_names.push_back(f.first);
  ASSIGN_OR_RETURN(Subgraph sub, BuildSubgraph(*graph_, feed_names, fetches, targets));
  auto ek = std::make_shared<ExecutorAndKeys>();
  ek->feeds = std::move(sub.feeds);
  ek->fetches = std::move(sub.fetches);
  for (const Node* n : sub.graph->nodes()) {
    const Node* orig = graph_->FindNode(n->name());
    ek->placement.push_back(orig != nullptr ? placement_[orig->id()]
                                            : PlacementRecord{n->name(), n->op(), n->assigned_device(),
                                                              PlacementReason::kColocated,
                                                              "feed or fetch of the step"});
  }
  PartitionOptions popts;
  popts.incarnation = [this](const std::string& device) { return devices_->IncarnationOf(device); };
  ASSIGN_OR_RETURN(auto partitions, Partition(*sub.graph, popts));
  // Each copy of the graph goes as soon as the next is made: a graph of a million nodes
  // takes gigabytes in every form.
  sub.graph.reset();
  for (auto& [device_name, def] : partitions) {
    ASSIGN_OR_RETURN(Device * device, devices_->Lookup(device_name));
    ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(def));
    def = GraphDef();
    for (Node* n : graph->nodes()) n->set_assigned_device(device_name);
    Executor::Params params;
    params.resource_mgr = resource_mgr_.get();
    params.function_runtime = LocalFunctionRuntime();
    params.lookup_device = [device](const Node&) -> StatusOr<DeviceBase*> { return static_cast<DeviceBase*>(device); };
    ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Create(std::move(graph), std::move(params)));
    ek->executors.push_back(std::move(executor));
  }
  std::lock_guard<std::mutex> lock(executors_mu_);
  auto [it, inserted] = executors_.emplace(std::move(key), std::move(ek));
  return it->second;
}

Status Session::Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                    const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                    std::vector<Tensor>* outputs) {
  return Run(RunOptions(), feeds, fetches, targets, outputs, nullptr);
}

Status Session::Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                    const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                    std::vector<Tensor>* outputs, RunMetadata* metadata) {
  ASSIGN_OR_RETURN(std::shared_ptr<const ExecutorAndKeys> ek,
                   GetOrCreateExecutor(feeds, fetches, targets));
  for (size_t i = 0; i < feeds.size(); ++i) {
    const Tensor& t = feeds[i].second;
    const SubgraphTensor& want = ek->feeds[i];
    if (t.dtype() != want.dtype) {
      return errors::InvalidArgument("Cannot feed a ", DataTypeName(t.dtype()), " tensor to '",
                                     feeds[i].first, "', which has dtype ", DataTypeName(want.dtype));
    }
    if (!t.shape().IsCompatibleWith(want.shape)) {
      return errors::InvalidArgument("Cannot feed value of shape ", t.shape().DebugString(),
                                     " for tensor '", feeds[i].first, "', which has shape ",
                                     want.shape.DebugString());
    }
  }

  VectorCallFrame frame(feeds, fetches.size());
  CancellationManager cancellation;
  // Only a step spread over several devices has tensors to hand between them.
  std::optional<IntraProcessRendezvous> rendezvous;
  const size_t num_parts = ek->executors.size();
  if (num_parts > 1) {
    rendezvous.emplace();
    // An error or deadline anywhere wakes every Recv still waiting, on every device.
    cancellation.RegisterCallback(cancellation.NewToken(), [r = &*rendezvous] {
      r->StartAbort(errors::Cancelled("Step was cancelled"));
    });
  }
  const bool trace = metadata != nullptr && options.trace_level == RunOptions::TraceLevel::kFullTrace;
  std::vector<std::vector<NodeExecStats>> stats(trace ? num_parts : 0);
  Executor::Args args;
  args.step_id = next_step_id_.fetch_add(1, std::memory_order_relaxed);
  args.call_frame = &frame;
  args.runner = inter_op_pool_;
  args.cancellation = &cancellation;
  args.rendezvous = rendezvous ? &*rendezvous : nullptr;

  const int64_t timeout_ms = options.timeout_in_ms > 0 ? options.timeout_in_ms : config_.operation_timeout_in_ms;
  const auto deadline = DeadlineAfter(std::chrono::milliseconds(timeout_ms));
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    size_t pending = 0;
    Status status;  // the first error, preferring a cause over the cancellations it caused
  } w;
  w.pending = num_parts;
  auto part_done = [&w](const Status& s) {
    std::lock_guard<std::mutex> lock(w.mu);
    if (!s.ok() && (w.status.ok() || (w.status.code() == Code::kCancelled && s.code() != Code::kCancelled))) {
      w.status = s;
    }
    if (--w.pending == 0) w.cv.notify_all();
  };
  // Every partition but the first starts on the pool, the first on this thread, unless the
  // step has a deadline: then this thread keeps the time, and only a thread of the pool may
  // be held by a long kernel.
  for (size_t i = num_parts; i-- > 0;) {
    Executor::Args part_args = args;
    if (trace) part_args.stats = &stats[i];
    const Executor* executor = ek->executors[i].get();
    if (i == 0 && !deadline) {
      executor->RunAsync(part_args, part_done);
    } else {
      inter_op_pool_->Schedule([executor, part_args, part_done] { executor->RunAsync(part_args, part_done); });
    }
  }
  bool timed_out = false;
  {
    std::unique_lock<std::mutex> lock(w.mu);
    if (deadline) timed_out = !w.cv.wait_until(lock, *deadline, [&] { return w.pending == 0; });
    if (timed_out) {
      lock.unlock();
      cancellation.StartCancel();
      lock.lock();
    }
    w.cv.wait(lock, [&] { return w.pending == 0; });
  }
  Status status = w.status;
  if (timed_out && (status.ok() || status.code() == Code::kCancelled)) {
    status = errors::DeadlineExceeded("Timed out after ", timeout_ms, " ms",
                                      status.ok() ? "" : ": " + status.message());
  }
  if (metadata != nullptr) {
    metadata->placement = ek->placement;
    metadata->step_stats.clear();
    for (auto& part : stats) {
      for (NodeExecStats& s : part) {
        if (!s.node.empty()) metadata->step_stats.push_back(std::move(s));
      }
    }
    metadata->partition_graphs.clear();
    if (options.output_partition_graphs) {
      for (const auto& executor : ek->executors) metadata->partition_graphs.push_back(executor->graph().ToGraphDef());
    }
  }
  RETURN_IF_ERROR(status);
  if (outputs != nullptr) *outputs = std::move(frame.retvals());
  return Status::OK();
}

}  // namespace tessera
