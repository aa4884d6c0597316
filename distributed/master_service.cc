#include "distributed/master_service.h"

#include <grpcpp/grpcpp.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/cluster_spec.h"
#include "distributed/grpc_worker.h"
#include "distributed/protos/master_service.grpc.pb.h"
#include "distributed/rpc_decode.h"
#include "distributed/rpc_util.h"
#include "graph/serialize/graph_json.h"
#include "graph/serialize/tensor_codec.h"

namespace tessera {
namespace {

// The master: sessions of clients that name this task as their target, each placed over
// the cluster's tasks (MasterSession).
class MasterService final : public rpc::MasterService::Service {
 public:
  MasterService(MasterSession::Environment env, SessionConfig config, const Authenticator& auth,
                std::chrono::seconds idle_session_timeout)
      : env_(std::move(env)),
        task_name_(TaskName(env_.job, env_.task)),
        config_(std::move(config)),
        auth_(auth),
        idle_session_timeout_(idle_session_timeout) {}

  grpc::Status CreateSession(grpc::ServerContext* context, grpc::ServerReader<rpc::CreateSessionRequest>* reader,
                             rpc::CreateSessionResponse* response) override {
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "CreateSession"); !s.ok()) return ToGrpc(s);
    rpc::CreateSessionRequest request;
    if (grpc::Status read = ReadTheRequest(reader, &request); !read.ok()) return read;
    StatusOr<GraphSpec> def = GraphSpecFromJson(request.graph_json());
    if (!def.ok()) return ToGrpc(def.status());
    SessionConfig config = config_;
    config.allow_soft_placement = request.allow_soft_placement();
    config.device_filters = {request.device_filters().begin(), request.device_filters().end()};
    // Tasks not up yet are waited for while the client still waits for the answer.
    auto discovery = kDefaultDiscoveryTimeout;
    if (context->deadline() != std::chrono::system_clock::time_point::max()) {
      discovery = std::chrono::duration_cast<std::chrono::milliseconds>(context->deadline() -
                                                                        std::chrono::system_clock::now()) -
                  std::chrono::milliseconds(1000);
    }
    CloseIdleSessions();
    StatusOr<std::unique_ptr<MasterSession>> session =
        MasterSession::Create(env_, config, *def, std::max(discovery, std::chrono::milliseconds(1)));
    if (!session.ok()) return ToGrpc(session.status());
    EncodePlacement((*session)->placement(), response->mutable_placement());
    for (const RemoteDevice& d : (*session)->devices()) EncodeDevice(d, response->add_devices());
    std::lock_guard<std::mutex> lock(mu_);
    const std::string handle = StrCat(task_name_, "/session:", ++last_handle_);
    sessions_.emplace(handle, Entry{std::move(*session), Clock::now(), 0});
    response->set_session_handle(handle);
    return grpc::Status::OK;
  }

  grpc::Status ExtendSession(grpc::ServerContext* context, grpc::ServerReader<rpc::ExtendSessionRequest>* reader,
                             rpc::ExtendSessionResponse* response) override {
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "ExtendSession"); !s.ok()) return ToGrpc(s);
    rpc::ExtendSessionRequest request;
    if (grpc::Status read = ReadTheRequest(reader, &request); !read.ok()) return read;
    StatusOr<std::shared_ptr<MasterSession>> session = Find(request.session_handle());
    if (!session.ok()) return ToGrpc(session.status());
    StatusOr<GraphSpec> more = GraphSpecFromJson(request.graph_json());
    if (!more.ok()) return ToGrpc(more.status());
    if (Status s = (*session)->Extend(*more); !s.ok()) return ToGrpc(s);
    EncodePlacement((*session)->placement(), response->mutable_placement());
    return grpc::Status::OK;
  }

  grpc::Status RunStep(grpc::ServerContext* context, grpc::ServerReader<rpc::RunStepRequest>* reader,
                       rpc::RunStepResponse* response) override {
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "RunStep"); !s.ok()) return ToGrpc(s);
    rpc::RunStepRequest request;
    if (grpc::Status read = ReadTheRequest(reader, &request); !read.ok()) return read;
    StatusOr<std::shared_ptr<MasterSession>> session = Find(request.session_handle(), /*step=*/true);
    if (!session.ok()) return ToGrpc(session.status());
    struct StepDone {  // the session counts as used until its step ends
      MasterService* service;
      std::string handle;
      ~StepDone() { service->EndStep(handle); }
    } done{this, request.session_handle()};
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (const rpc::NamedTensor& f : request.feeds()) {
      StatusOr<Tensor> t = DecodeTensor(f.tensor());
      if (!t.ok()) return ToGrpc(Status(t.status().code(), StrCat("feed '", f.name(), "': ", t.status().message())));
      feeds.emplace_back(f.name(), *std::move(t));
    }
    RunOptions options;
    options.timeout_in_ms = request.timeout_in_ms();
    std::vector<Tensor> outputs;
    Status s = (*session)->Run(options, feeds, {request.fetches().begin(), request.fetches().end()},
                               {request.targets().begin(), request.targets().end()}, &outputs,
                               [context] { return context->IsCancelled(); });
    if (!s.ok()) return ToGrpc(s);
    for (const Tensor& t : outputs) {
      StatusOr<std::string> bytes = EncodeTensor(t);
      if (!bytes.ok()) return ToGrpc(bytes.status());
      response->add_tensors(std::move(*bytes));
    }
    return grpc::Status::OK;
  }

  grpc::Status CloseSession(grpc::ServerContext* context, grpc::ServerReader<rpc::CloseSessionRequest>* reader,
                            rpc::CloseSessionResponse*) override {
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "CloseSession"); !s.ok()) return ToGrpc(s);
    rpc::CloseSessionRequest request;
    if (grpc::Status read = ReadTheRequest(reader, &request); !read.ok()) return read;
    std::shared_ptr<MasterSession> closing;  // destroyed outside the lock: it deregisters its graphs
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = sessions_.find(request.session_handle());
      if (it == sessions_.end()) return ToGrpc(NoSession(request.session_handle()));
      closing = std::move(it->second.session);
      sessions_.erase(it);
    }
    return grpc::Status::OK;
  }

  // Every task of the cluster drops the containers, the master's own last.
  grpc::Status Reset(grpc::ServerContext* context, grpc::ServerReader<rpc::ResetRequest>* reader, rpc::ResetResponse*) override {
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "Reset"); !s.ok()) return ToGrpc(s);
    rpc::ResetRequest request;
    if (grpc::Status read = ReadTheRequest(reader, &request); !read.ok()) return read;
    const std::vector<std::string> containers(request.containers().begin(), request.containers().end());
    for (const auto& [job, addresses] : env_.channels->cluster().jobs()) {
      for (int i = 0; i < static_cast<int>(addresses.size()); ++i) {
        if (job == env_.job && i == env_.task) continue;
        StatusOr<std::shared_ptr<grpc::Channel>> channel = env_.channels->ForTask(job, i);
        if (!channel.ok()) return ToGrpc(channel.status());
        GrpcWorker worker(TaskName(job, i), addresses[i], *std::move(channel), env_.channels);
        if (Status s = worker.ResetContainers(containers); !s.ok()) return ToGrpc(s);
      }
    }
    env_.local->resources()->Cleanup(containers);
    return grpc::Status::OK;
  }

 private:
  static constexpr std::chrono::milliseconds kDefaultDiscoveryTimeout{60000};

  static void EncodePlacement(const std::vector<PlacementRecord>& records,
                              google::protobuf::RepeatedPtrField<rpc::PlacedNode>* out) {
    for (const PlacementRecord& r : records) {
      rpc::PlacedNode* p = out->Add();
      p->set_node(r.node);
      p->set_op(r.op);
      p->set_device(r.device);
      p->set_reason(static_cast<int>(r.reason));
      p->set_detail(r.detail);
    }
  }

  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::shared_ptr<MasterSession> session;
    Clock::time_point last_used;
    int steps_running = 0;
  };

  Status NoSession(const std::string& handle) const {
    return errors::NotFound(task_name_, " has no session '", handle, "': it was closed, left idle for more than ",
                            idle_session_timeout_.count(), " s, or the task restarted");
  }
  // The session, marked used now; with `step`, a step of it running until EndStep.
  StatusOr<std::shared_ptr<MasterSession>> Find(const std::string& handle, bool step = false) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(handle);
    if (it == sessions_.end()) return NoSession(handle);
    it->second.last_used = Clock::now();
    if (step) ++it->second.steps_running;
    return it->second.session;
  }
  void EndStep(const std::string& handle) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(handle);
    if (it == sessions_.end()) return;
    it->second.last_used = Clock::now();
    --it->second.steps_running;
  }
  // Sessions whose clients are gone: idle too long, no step running (a client that goes
  // away mid-step has its step cancelled with its call).
  void CloseIdleSessions() {
    std::vector<std::shared_ptr<MasterSession>> closing;  // destroyed outside the lock
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto now = Clock::now();
      for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (it->second.steps_running == 0 && now - it->second.last_used > idle_session_timeout_) {
          closing.push_back(std::move(it->second.session));
          it = sessions_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }

  const MasterSession::Environment env_;
  const std::string task_name_;
  const SessionConfig config_;
  const Authenticator& auth_;
  std::mutex mu_;
  int64_t last_handle_ = 0;                                         // guarded by mu_
  const std::chrono::seconds idle_session_timeout_;
  std::map<std::string, Entry> sessions_;  // guarded by mu_
};

}  // namespace

std::unique_ptr<grpc::Service> NewMasterService(MasterSession::Environment env, SessionConfig config,
                                                const Authenticator& auth,
                                                std::chrono::seconds idle_session_timeout) {
  return std::make_unique<MasterService>(std::move(env), std::move(config), auth, idle_session_timeout);
}

}  // namespace tessera
