#include "distributed/grpc_session.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <set>

#include "distributed/cluster_server.h"
#include "distributed/protos/master_service.grpc.pb.h"
#include "distributed/rpc_util.h"
#include "distributed/worker_channels.h"
#include "graph/platform/logging.h"
#include "graph/serialize/graph_json.h"
#include "graph/serialize/tensor_codec.h"
#include "kernels/op_kernel.h"
#include "placement/placer.h"
#include "runtime/session.h"

namespace tessera {
namespace {

constexpr char kPrefix[] = "grpc://";
constexpr std::chrono::milliseconds kControlTimeout(60000);

// Read at every call, so that a token set or withdrawn later applies to the next RPC.
std::string TokenFromEnvironment() {
  const char* token = std::getenv("TESSERA_CLUSTER_TOKEN");
  return token == nullptr ? "" : token;
}

class GrpcSession final : public Session {
 public:
  static StatusOr<std::unique_ptr<Session>> Create(const std::string& target, const SessionConfig& config,
                                                   const GraphSpec& def) {
    if (const std::string token = TokenFromEnvironment(); !token.empty()) {
      RETURN_IF_ERROR(CheckClusterToken(token).WithPrefix("TESSERA_CLUSTER_TOKEN: "));
    }
    std::unique_ptr<GrpcSession> s(new GrpcSession(target, config));
    ASSIGN_OR_RETURN(s->graph_, Graph::FromSpec(def));
    rpc::CreateSessionRequest request;
    request.set_graph_json(GraphSpecToJson(def));
    request.set_allow_soft_placement(config.allow_soft_placement);
    for (const std::string& f : config.device_filters) request.add_device_filters(f);
    rpc::CreateSessionResponse response;
    // The master waits for the cluster's tasks while this call lasts: the user's timeout
    // bounds that wait too, as it does in TensorFlow.
    const std::chrono::milliseconds timeout =
        config.operation_timeout_in_ms > 0 ? std::min<std::chrono::milliseconds>(
                                                 kControlTimeout, std::chrono::milliseconds(config.operation_timeout_in_ms))
                                           : kControlTimeout;
    auto context = NewCallContext(TokenFromEnvironment(), timeout);
    RETURN_IF_ERROR(FromGrpc(SendTheRequest(s->stub_->CreateSession(context.get(), &response), request), *context, s->Who()));
    s->handle_ = response.session_handle();
    s->placement_ = DecodePlacement(response.placement());
    // The master's devices, as descriptions: nothing here allocates or computes on them.
    std::vector<std::unique_ptr<Device>> devices;
    for (const rpc::DeviceAttributes& a : response.devices()) {
      ASSIGN_OR_RETURN(DeviceName name, DeviceName::Parse(a.name()));
      devices.push_back(std::make_unique<Device>(name, nullptr, nullptr, nullptr,
                                                 DeviceAttributes{a.physical_device_desc(), a.memory_limit()}));
    }
    s->devices_ = std::make_unique<DeviceMgr>(std::move(devices));
    // The master placed the graph; the log is printed where the user asked for it.
    if (config.log_device_placement) Log(LogSeverity::kInfo, PlacementLog(s->devices_->AsDeviceSet(), s->placement_));
    return std::unique_ptr<Session>(std::move(s));
  }

  ~GrpcSession() override {
    if (handle_.empty()) return;
    rpc::CloseSessionRequest request;
    request.set_session_handle(handle_);
    rpc::CloseSessionResponse response;
    auto context = NewCallContext(TokenFromEnvironment(), std::chrono::milliseconds(5000));
    // Best effort: a master that is gone has nothing left to close.
    (void)SendTheRequest(stub_->CloseSession(context.get(), &response), request);
  }

  using Session::Run;
  Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata) override {
    rpc::RunStepRequest request;
    request.set_session_handle(handle_);
    for (const auto& [name, value] : feeds) {
      ASSIGN_OR_RETURN(std::string bytes, EncodeTensor(value));
      rpc::NamedTensor* f = request.add_feeds();
      f->set_name(name);
      f->set_tensor(std::move(bytes));
    }
    for (const std::string& f : fetches) request.add_fetches(f);
    for (const std::string& t : targets) request.add_targets(t);
    const int64_t timeout_ms = options.timeout_in_ms > 0 ? options.timeout_in_ms : config_.operation_timeout_in_ms;
    request.set_timeout_in_ms(timeout_ms);
    rpc::RunStepResponse response;
    // The master enforces the step's deadline; the RPC's own is a little later, so that a
    // master that stopped answering is found out too.
    // Shared with the callback a caller's cancellation manager holds, which may run after
    // the call ends.
    std::shared_ptr<grpc::ClientContext> context =
        NewCallContext(TokenFromEnvironment(), timeout_ms > 0 ? std::chrono::milliseconds(timeout_ms + 5000) : std::chrono::milliseconds(0));
    CancellationManager::Token link = 0;
    if (options.cancellation != nullptr) {
      link = options.cancellation->NewToken();
      if (!options.cancellation->RegisterCallback(link, [context] { context->TryCancel(); })) {
        return errors::Cancelled("Step was cancelled before it started");
      }
    }
    {
      std::lock_guard<std::mutex> lock(steps_mu_);
      if (closed_) {
        if (options.cancellation != nullptr) options.cancellation->DeregisterCallback(link);
        return errors::Cancelled("Session has been closed.");
      }
      steps_.insert(context.get());
    }
    grpc::Status called = SendTheRequest(stub_->RunStep(context.get(), &response), request);
    {
      std::lock_guard<std::mutex> lock(steps_mu_);
      steps_.erase(context.get());
    }
    if (options.cancellation != nullptr) options.cancellation->DeregisterCallback(link);
    // The master sees the cancelled call and cancels the step on every task.
    if (called.error_code() == grpc::StatusCode::CANCELLED && IsClosed()) {
      return errors::Cancelled("Session has been closed.");
    }
    if (called.error_code() == grpc::StatusCode::CANCELLED && options.cancellation != nullptr &&
        options.cancellation->IsCancelled()) {
      return errors::Cancelled("Step was cancelled");
    }
    RETURN_IF_ERROR(FromGrpc(called, *context, Who()));
    if (response.tensors_size() != static_cast<int>(fetches.size())) {
      return errors::Internal(Who(), " answered ", response.tensors_size(), " tensors for ", fetches.size(), " fetches");
    }
    if (outputs != nullptr) {
      outputs->clear();
      for (const std::string& bytes : response.tensors()) {
        ASSIGN_OR_RETURN(Tensor t, DecodeTensor(bytes));
        outputs->push_back(std::move(t));
      }
    }
    if (metadata != nullptr) {
      std::lock_guard<std::mutex> lock(graph_mu_);
      metadata->placement = placement_;
    }
    return Status::OK();
  }

  // The master places the new nodes; this side keeps a copy of the graph for graph().
  Status Extend(const GraphSpec& more) override {
    std::lock_guard<std::mutex> lock(graph_mu_);
    GraphSpec all = graph_->ToSpec();
    all.nodes.insert(all.nodes.end(), more.nodes.begin(), more.nodes.end());
    ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromSpec(all));
    rpc::ExtendSessionRequest request;
    request.set_session_handle(handle_);
    request.set_graph_json(GraphSpecToJson(more));
    rpc::ExtendSessionResponse response;
    auto context = NewCallContext(TokenFromEnvironment(), kControlTimeout);
    RETURN_IF_ERROR(FromGrpc(SendTheRequest(stub_->ExtendSession(context.get(), &response), request), *context, Who()));
    graph_ = std::move(graph);
    placement_ = DecodePlacement(response.placement());
    return Status::OK();
  }

  void Reset(const std::vector<std::string>& containers) override {
    (void)ResetOn(*stub_, Who(), TokenFromEnvironment(), containers);
  }

  void Close() override {
    std::lock_guard<std::mutex> lock(steps_mu_);
    closed_ = true;
    for (grpc::ClientContext* step : steps_) step->TryCancel();
  }

  const std::vector<PlacementRecord>& placement() const override { return placement_; }
  const DeviceMgr& devices() const override { return *devices_; }
  const Graph& graph() const override { return *graph_; }
  // The steps run on the master's threads.
  int inter_op_threads() const override { return 0; }
  int intra_op_threads() const override { return 0; }

  static Status ResetOn(rpc::MasterService::Stub& stub, const std::string& who, const std::string& token,
                        const std::vector<std::string>& containers) {
    rpc::ResetRequest request;
    for (const std::string& c : containers) request.add_containers(c);
    rpc::ResetResponse response;
    auto context = NewCallContext(token, kControlTimeout);
    return FromGrpc(SendTheRequest(stub.Reset(context.get(), &response), request), *context, who);
  }

 private:
  GrpcSession(const std::string& target, const SessionConfig& config)
      : target_(target),
        config_(config),
        stub_(rpc::MasterService::NewStub(NewWorkerChannel(target))) {}
  std::string Who() const { return StrCat("the master at ", target_); }
  static std::vector<PlacementRecord> DecodePlacement(const google::protobuf::RepeatedPtrField<rpc::PlacedNode>& placed) {
    std::vector<PlacementRecord> out;
    for (const rpc::PlacedNode& p : placed) {
      out.push_back({p.node(), p.op(), p.device(), static_cast<PlacementReason>(p.reason()), p.detail()});
    }
    return out;
  }
  bool IsClosed() {
    std::lock_guard<std::mutex> lock(steps_mu_);
    return closed_;
  }

  const std::string target_;
  const SessionConfig config_;
  const std::unique_ptr<rpc::MasterService::Stub> stub_;
  std::string handle_;
  std::mutex graph_mu_;  // held through an Extend, its call included
  std::unique_ptr<Graph> graph_;            // guarded by graph_mu_
  std::vector<PlacementRecord> placement_;  // guarded by graph_mu_
  std::unique_ptr<DeviceMgr> devices_;
  std::mutex steps_mu_;
  bool closed_ = false;                     // guarded by steps_mu_
  std::set<grpc::ClientContext*> steps_;    // guarded by steps_mu_: the RunStep calls in flight
};

class GrpcSessionFactory final : public SessionFactory {
 public:
  StatusOr<std::unique_ptr<Session>> NewSession(const std::string& target, const SessionConfig& config,
                                                const GraphSpec& graph) override {
    return GrpcSession::Create(target, config, graph);
  }
  Status Reset(const std::string& target, const std::vector<std::string>& containers) override {
    auto stub = rpc::MasterService::NewStub(NewWorkerChannel(target));
    return GrpcSession::ResetOn(*stub, StrCat("the master at ", target), TokenFromEnvironment(), containers);
  }
};

}  // namespace

void RegisterGrpcSessionFactory() {
  static std::once_flag once;
  std::call_once(once, [] { (void)SessionFactory::Register(kPrefix, std::make_shared<GrpcSessionFactory>()); });
}

}  // namespace tessera
