#include "distributed/cluster_server.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "distributed/graph_mgr.h"
#include "distributed/master_session.h"
#include "distributed/protos/master_service.grpc.pb.h"
#include "distributed/protos/worker_service.grpc.pb.h"
#include "distributed/recv_tensor_wire.h"
#include "distributed/rpc_decode.h"
#include "distributed/rpc_util.h"
#include "distributed/same_host_transport.h"
#include "distributed/tls.h"
#include "distributed/worker_channels.h"
#include "graph/platform/logging.h"
#include "graph/serialize/graph_json.h"
#include "graph/serialize/tensor_codec.h"

namespace tessera {
namespace {

bool IsLoopback(std::string_view address) {
  const std::string_view host = address.substr(0, address.rfind(':'));
  return host == "localhost" || host == "[::1]" || host.starts_with("127.");
}

// Admits a request when the server has no token or the request carries it.
class Authenticator {
 public:
  Authenticator(std::string task_name, std::string token)
      : task_name_(std::move(task_name)), token_(std::move(token)) {}

  Status Check(const grpc::ServerContextBase& context, std::string_view method) const {
    if (token_.empty()) return Status::OK();
    const auto& metadata = context.client_metadata();
    auto it = metadata.find(kClusterTokenHeader);
    if (it != metadata.end() && SameToken(std::string_view(it->second.data(), it->second.size()), token_)) {
      return Status::OK();
    }
    const char* why = it == metadata.end() ? "without the cluster token" : "with a wrong cluster token";
    Log(LogSeverity::kWarning, StrCat(task_name_, ": refused ", method, " from ", context.peer(), " ", why));
    return errors::Unauthenticated(task_name_, " refused ", method, ": the request came ", why,
                                   " (TESSERA_CLUSTER_TOKEN)");
  }
  const std::string& token() const { return token_; }

 private:
  const std::string task_name_;
  const std::string token_;
};

// One RecvTensor call: it waits, with no thread blocked, for the step's tensor (or error)
// in the rendezvous, then writes the tensor's parts one after another, each once the last
// has gone. The receiver may cancel at any time. Exactly one of the rendezvous callback,
// a finished write and the cancellation acts on the call at a time: whichever finds it idle.
class RecvTensorStream final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  RecvTensorStream() : state_(std::make_shared<State>(this)) {}

  // The rendezvous' callback: it may outlive the call, so it holds only the State.
  Rendezvous::DoneCallback OnTensor() {
    return [state = state_](const Status& s, const Tensor& value) {
      if (!s.ok()) {
        state->Fail(ToGrpc(s));
        return;
      }
      StatusOr<std::vector<grpc::ByteBuffer>> parts = EncodeRecvTensorStream(value);
      if (!parts.ok()) {
        state->Fail(ToGrpc(parts.status()));
        return;
      }
      state->Start(*std::move(parts));
    };
  }
  void OnWriteDone(bool ok) override { state_->WriteDone(ok); }
  void OnCancel() override { state_->Fail(grpc::Status(grpc::StatusCode::CANCELLED, "the receiver gave up")); }
  void OnDone() override { delete this; }

 private:
  class State {
   public:
    explicit State(RecvTensorStream* call) : call_(call) {}

    void Start(std::vector<grpc::ByteBuffer> parts) {
      std::unique_lock<std::mutex> lock(mu_);
      if (call_ == nullptr) return;
      parts_ = std::move(parts);
      writing_ = true;
      Write(lock);
    }

    void WriteDone(bool ok) {
      std::unique_lock<std::mutex> lock(mu_);
      if (!ok || failure_.has_value()) {
        RecvTensorStream* call = std::exchange(call_, nullptr);
        lock.unlock();
        call->Finish(ok ? *failure_ : grpc::Status(grpc::StatusCode::CANCELLED, "the receiver left"));
        return;
      }
      ++next_;
      Write(lock);
    }

    // The first failure wins; a write in flight finishes the call when it comes back.
    void Fail(const grpc::Status& status) {
      std::unique_lock<std::mutex> lock(mu_);
      if (call_ == nullptr || failure_.has_value()) return;
      failure_ = status;
      if (writing_) return;
      RecvTensorStream* call = std::exchange(call_, nullptr);
      lock.unlock();
      call->Finish(status);
    }

   private:
    // Writes parts_[next_], the last one together with the call's end, so that the
    // receiver has its tensor and the status in one go (a small tensor is one part).
    void Write(std::unique_lock<std::mutex>& lock) {
      RecvTensorStream* call = call_;
      const grpc::ByteBuffer* part = &parts_[next_];
      if (next_ + 1 < parts_.size()) {
        lock.unlock();
        call->StartWrite(part);
        return;
      }
      call_ = nullptr;
      lock.unlock();
      call->StartWriteAndFinish(part, grpc::WriteOptions(), grpc::Status::OK);
    }

    std::mutex mu_;
    RecvTensorStream* call_;  // null once finished; guarded by mu_
    bool writing_ = false;    // the parts are being written; guarded by mu_
    std::optional<grpc::Status> failure_;  // guarded by mu_
    std::vector<grpc::ByteBuffer> parts_;  // fixed once writing_
    size_t next_ = 0;                      // the part being written; only the writer touches it
  };
  const std::shared_ptr<State> state_;
};

class WorkerService final : public rpc::WorkerService::WithRawCallbackMethod_RecvTensor<rpc::WorkerService::Service> {
 public:
  WorkerService(std::string task_name, std::shared_ptr<Server> local, std::shared_ptr<GraphMgr> graphs,
                const Authenticator& auth)
      : task_name_(std::move(task_name)), local_(std::move(local)), graphs_(std::move(graphs)), auth_(auth) {}

  grpc::Status GetStatus(grpc::ServerContext* context, const rpc::GetStatusRequest*,
                         rpc::GetStatusResponse* response) override {
    if (Status s = auth_.Check(*context, "GetStatus"); !s.ok()) return ToGrpc(s);
    response->set_task(task_name_);
    for (const Device* d : local_->devices()->devices()) EncodeDevice(DescribeDevice(*d), response->add_devices());
    return grpc::Status::OK;
  }

  // Answers once the step's tensor is in this task's rendezvous, with parts that refer to
  // the tensor's memory rather than copies of it.
  grpc::ServerWriteReactor<grpc::ByteBuffer>* RecvTensor(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request_bytes) override {
    auto* call = new RecvTensorStream();
    if (Status s = auth_.Check(*context, "RecvTensor"); !s.ok()) {
      call->OnTensor()(s, Tensor());
      return call;
    }
    rpc::RecvTensorRequest request;
    grpc::Slice bytes;
    if (!request_bytes->DumpToSingleSlice(&bytes).ok() || !request.ParseFromArray(bytes.begin(), bytes.size())) {
      call->OnTensor()(errors::InvalidArgument(task_name_, ": a RecvTensor request that does not parse"), Tensor());
      return call;
    }
    local_->rendezvous()->Find(request.step_id())->RecvAsync(request.rendezvous_key(), call->OnTensor());
    return call;
  }

  grpc::Status RegisterGraph(grpc::ServerContext* context, const rpc::RegisterGraphRequest* request,
                             rpc::RegisterGraphResponse* response) override {
    if (Status s = auth_.Check(*context, "RegisterGraph"); !s.ok()) return ToGrpc(s);
    auto partitions = DecodePartitions(*request);
    if (!partitions.ok()) return ToGrpc(partitions.status());
    StatusOr<std::string> handle = graphs_->Register(std::move(*partitions));
    if (!handle.ok()) return ToGrpc(handle.status());
    response->set_graph_handle(*handle);
    return grpc::Status::OK;
  }

  grpc::Status DeregisterGraph(grpc::ServerContext* context, const rpc::DeregisterGraphRequest* request,
                               rpc::DeregisterGraphResponse*) override {
    if (Status s = auth_.Check(*context, "DeregisterGraph"); !s.ok()) return ToGrpc(s);
    return ToGrpc(graphs_->Deregister(request->graph_handle()));
  }

  grpc::Status RunGraph(grpc::ServerContext* context, const rpc::RunGraphRequest* request,
                        rpc::RunGraphResponse* response) override {
    if (Status s = auth_.Check(*context, "RunGraph"); !s.ok()) return ToGrpc(s);
    for (int64_t step_id : request->cleanup_step_ids()) graphs_->CleanupStep(step_id);
    StatusOr<std::map<int, Tensor>> args = DecodeArgs(*request);
    if (!args.ok()) return ToGrpc(args.status());
    GraphMgr::StepOptions options;
    options.timeout = std::chrono::milliseconds(request->timeout_in_ms());
    options.abandoned = [context] { return context->IsCancelled(); };
    std::map<int, Tensor> retvals;
    Status s = graphs_->Run(request->graph_handle(), request->step_id(), *std::move(args), options, &retvals);
    if (!s.ok()) return ToGrpc(s);
    for (const auto& [index, value] : retvals) {
      StatusOr<std::string> bytes = EncodeTensor(value);
      if (!bytes.ok()) return ToGrpc(bytes.status());
      rpc::IndexedTensor* r = response->add_retvals();
      r->set_index(index);
      r->set_tensor(std::move(*bytes));
    }
    return grpc::Status::OK;
  }

  grpc::Status CleanupStep(grpc::ServerContext* context, const rpc::CleanupStepRequest* request,
                           rpc::CleanupStepResponse*) override {
    if (Status s = auth_.Check(*context, "CleanupStep"); !s.ok()) return ToGrpc(s);
    for (int64_t step_id : request->step_ids()) graphs_->CleanupStep(step_id);
    return grpc::Status::OK;
  }

  grpc::Status ResetContainers(grpc::ServerContext* context, const rpc::ResetContainersRequest* request,
                               rpc::ResetContainersResponse*) override {
    if (Status s = auth_.Check(*context, "ResetContainers"); !s.ok()) return ToGrpc(s);
    local_->resources()->Cleanup({request->containers().begin(), request->containers().end()});
    return grpc::Status::OK;
  }

 private:
  const std::string task_name_;
  const std::shared_ptr<Server> local_;
  const std::shared_ptr<GraphMgr> graphs_;
  const Authenticator& auth_;
};

// The master: sessions of clients that name this task as their target, each placed over
// the cluster's tasks (MasterSession).
class MasterService final : public rpc::MasterService::Service {
 public:
  MasterService(MasterSession::Environment env, SessionConfig config, const Authenticator& auth)
      : env_(std::move(env)), task_name_(TaskName(env_.job, env_.task)), config_(std::move(config)), auth_(auth) {}

  grpc::Status CreateSession(grpc::ServerContext* context, const rpc::CreateSessionRequest* request,
                             rpc::CreateSessionResponse* response) override {
    if (Status s = auth_.Check(*context, "CreateSession"); !s.ok()) return ToGrpc(s);
    StatusOr<GraphDef> def = GraphDefFromJson(request->graph_json());
    if (!def.ok()) return ToGrpc(def.status());
    SessionConfig config = config_;
    config.allow_soft_placement = request->allow_soft_placement();
    config.device_filters = {request->device_filters().begin(), request->device_filters().end()};
    // Tasks not up yet are waited for while the client still waits for the answer.
    auto discovery = kDefaultDiscoveryTimeout;
    if (context->deadline() != std::chrono::system_clock::time_point::max()) {
      discovery = std::chrono::duration_cast<std::chrono::milliseconds>(context->deadline() -
                                                                        std::chrono::system_clock::now()) -
                  std::chrono::milliseconds(1000);
    }
    StatusOr<std::unique_ptr<MasterSession>> session =
        MasterSession::Create(env_, config, *def, std::max(discovery, std::chrono::milliseconds(1)));
    if (!session.ok()) return ToGrpc(session.status());
    for (const PlacementRecord& r : (*session)->placement()) {
      rpc::PlacedNode* p = response->add_placement();
      p->set_node(r.node);
      p->set_op(r.op);
      p->set_device(r.device);
      p->set_reason(static_cast<int>(r.reason));
      p->set_detail(r.detail);
    }
    for (const RemoteDevice& d : (*session)->devices()) EncodeDevice(d, response->add_devices());
    std::lock_guard<std::mutex> lock(mu_);
    const std::string handle = StrCat(task_name_, "/session:", ++last_handle_);
    sessions_.emplace(handle, std::move(*session));
    response->set_session_handle(handle);
    return grpc::Status::OK;
  }

  grpc::Status RunStep(grpc::ServerContext* context, const rpc::RunStepRequest* request,
                       rpc::RunStepResponse* response) override {
    if (Status s = auth_.Check(*context, "RunStep"); !s.ok()) return ToGrpc(s);
    StatusOr<std::shared_ptr<MasterSession>> session = Find(request->session_handle());
    if (!session.ok()) return ToGrpc(session.status());
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (const rpc::NamedTensor& f : request->feeds()) {
      StatusOr<Tensor> t = DecodeTensor(f.tensor());
      if (!t.ok()) return ToGrpc(Status(t.status().code(), StrCat("feed '", f.name(), "': ", t.status().message())));
      feeds.emplace_back(f.name(), *std::move(t));
    }
    RunOptions options;
    options.timeout_in_ms = request->timeout_in_ms();
    std::vector<Tensor> outputs;
    Status s = (*session)->Run(options, feeds, {request->fetches().begin(), request->fetches().end()},
                               {request->targets().begin(), request->targets().end()}, &outputs,
                               [context] { return context->IsCancelled(); });
    if (!s.ok()) return ToGrpc(s);
    for (const Tensor& t : outputs) {
      StatusOr<std::string> bytes = EncodeTensor(t);
      if (!bytes.ok()) return ToGrpc(bytes.status());
      response->add_tensors(std::move(*bytes));
    }
    return grpc::Status::OK;
  }

  grpc::Status CloseSession(grpc::ServerContext* context, const rpc::CloseSessionRequest* request,
                            rpc::CloseSessionResponse*) override {
    if (Status s = auth_.Check(*context, "CloseSession"); !s.ok()) return ToGrpc(s);
    std::shared_ptr<MasterSession> closing;  // destroyed outside the lock: it deregisters its graphs
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = sessions_.find(request->session_handle());
      if (it == sessions_.end()) return ToGrpc(NoSession(request->session_handle()));
      closing = std::move(it->second);
      sessions_.erase(it);
    }
    return grpc::Status::OK;
  }

  // Every task of the cluster drops the containers, the master's own last.
  grpc::Status Reset(grpc::ServerContext* context, const rpc::ResetRequest* request, rpc::ResetResponse*) override {
    if (Status s = auth_.Check(*context, "Reset"); !s.ok()) return ToGrpc(s);
    rpc::ResetContainersRequest reset;
    *reset.mutable_containers() = request->containers();
    for (const auto& [job, addresses] : env_.channels->cluster().jobs()) {
      for (int i = 0; i < static_cast<int>(addresses.size()); ++i) {
        if (job == env_.job && i == env_.task) continue;
        StatusOr<std::shared_ptr<grpc::Channel>> channel = env_.channels->ForTask(job, i);
        if (!channel.ok()) return ToGrpc(channel.status());
        rpc::ResetContainersResponse response;
        auto call = env_.channels->NewContext(kResetTimeout);
        Status s = FromGrpc(rpc::WorkerService::NewStub(*channel)->ResetContainers(call.get(), reset, &response),
                            TaskName(job, i));
        if (!s.ok()) return ToGrpc(s);
      }
    }
    env_.local->resources()->Cleanup({request->containers().begin(), request->containers().end()});
    return grpc::Status::OK;
  }

 private:
  static constexpr std::chrono::milliseconds kDefaultDiscoveryTimeout{60000};
  static constexpr std::chrono::milliseconds kResetTimeout{10000};

  Status NoSession(const std::string& handle) const {
    return errors::NotFound(task_name_, " has no session '", handle, "': it was closed, or the task restarted");
  }
  StatusOr<std::shared_ptr<MasterSession>> Find(const std::string& handle) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(handle);
    if (it == sessions_.end()) return NoSession(handle);
    return it->second;
  }

  const MasterSession::Environment env_;
  const std::string task_name_;
  const SessionConfig config_;
  const Authenticator& auth_;
  std::mutex mu_;
  int64_t last_handle_ = 0;                                         // guarded by mu_
  std::map<std::string, std::shared_ptr<MasterSession>> sessions_;  // guarded by mu_
};

}  // namespace

struct ClusterServer::Impl {
  std::unique_ptr<ThreadPool> pool;  // runs the steps masters start here
  std::shared_ptr<GraphMgr> graphs;
  std::unique_ptr<Authenticator> auth;
  std::unique_ptr<WorkerService> service;
  std::unique_ptr<MasterService> master;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<SameHostServer> same_host;  // null when off
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;  // guarded by mu: Stop has begun
  bool stopped = false;   // guarded by mu: Shutdown has returned
};

StatusOr<std::unique_ptr<ClusterServer>> ClusterServer::Create(const ClusterSpec& cluster, std::string_view job,
                                                               int task, ClusterServerOptions options) {
  ASSIGN_OR_RETURN(std::string address, cluster.TaskAddress(job, task));
  std::unique_ptr<ClusterServer> s(new ClusterServer());
  s->task_name_ = TaskName(job, task);
  ASSIGN_OR_RETURN(s->local_, Server::CreateForTask(options.config, job, task));
  if (options.token.empty() && !IsLoopback(address)) {
    Log(LogSeverity::kWarning, StrCat(s->task_name_, " serves ", address,
                                      " without a cluster token: anyone who can reach it can run graphs on it. "
                                      "Set TESSERA_CLUSTER_TOKEN or --token-file."));
  }
  s->impl_ = std::make_unique<Impl>();
  const int threads = options.config.inter_op_parallelism_threads > 0
                          ? options.config.inter_op_parallelism_threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ASSIGN_OR_RETURN(s->impl_->pool, ThreadPool::Create("inter_op", threads));
  auto channels = std::make_shared<WorkerChannels>(cluster, options.token);
  s->impl_->graphs = std::make_shared<GraphMgr>(s->local_, std::string(job), task, channels, s->impl_->pool.get());
  s->impl_->auth = std::make_unique<Authenticator>(s->task_name_, std::move(options.token));
  s->impl_->service = std::make_unique<WorkerService>(s->task_name_, s->local_, s->impl_->graphs, *s->impl_->auth);
  s->impl_->master = std::make_unique<MasterService>(
      MasterSession::Environment{std::string(job), task, s->local_, s->impl_->graphs, channels}, options.config,
      *s->impl_->auth);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, ServerCredentials(), &port);
  builder.RegisterService(s->impl_->service.get());
  builder.RegisterService(s->impl_->master.get());
  // Two tasks on one address would split its connections between them: the second must fail.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Tensors travel whole: no 4 MiB cap on a message.
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  // Heartbeats both ways: the server pings its callers too, so a step whose master died is
  // cancelled here; and it accepts the callers' pings at the rate they send them.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kHeartbeatIntervalMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kHeartbeatTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, kHeartbeatIntervalMs / 2);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  s->impl_->server = builder.BuildAndStart();
  if (s->impl_->server == nullptr || port == 0) {
    return errors::Unavailable(s->task_name_, " cannot listen on ", address,
                               ": the port is in use or the address is not one of this machine's");
  }
  if (options.same_host_transport && !TlsInUse()) {
    StatusOr<std::unique_ptr<SameHostServer>> same_host =
        SameHostServer::Start(address, s->task_name_, s->local_->rendezvous(), s->impl_->auth->token());
    // Tasks on this machine then use gRPC, as those elsewhere do.
    if (same_host.ok()) s->impl_->same_host = std::move(*same_host);
    else Log(LogSeverity::kWarning, same_host.status().message());
  }
  s->target_ = StrCat("grpc://", address);
  return s;
}

ClusterServer::~ClusterServer() {
  if (impl_ == nullptr) return;
  Stop();
  Join();
}

void ClusterServer::Stop(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;  // another caller shuts down; Join waits for it
    impl_->stopping = true;
  }
  if (impl_->server != nullptr) impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->same_host.reset();
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stopped = true;
  impl_->cv.notify_all();
}

void ClusterServer::Join() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->cv.wait(lock, [this] { return impl_->stopped; });
}

StatusOr<TaskStatus> GetTaskStatus(std::string_view address, const std::string& token,
                                   std::chrono::milliseconds timeout) {
  auto stub = rpc::WorkerService::NewStub(NewWorkerChannel(address));
  auto context = NewCallContext(token, timeout);
  rpc::GetStatusRequest request;
  rpc::GetStatusResponse response;
  RETURN_IF_ERROR(FromGrpc(stub->GetStatus(context.get(), request, &response), StrCat("task at ", address)));
  TaskStatus status;
  status.task = response.task();
  for (const rpc::DeviceAttributes& a : response.devices()) status.devices.push_back(DecodeDevice(a));
  return status;
}

}  // namespace tessera
