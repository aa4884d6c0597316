#include "distributed/grpc_worker.h"

#include <grpcpp/grpcpp.h>

#include <atomic>

#include "distributed/protos/worker_service.grpc.pb.h"
#include "distributed/rpc_decode.h"
#include "distributed/rpc_util.h"
#include "graph/platform/logging.h"
#include "graph/serialize/graph_json.h"
#include "graph/serialize/tensor_codec.h"

namespace tessera {
namespace {

// How long a control RPC (register, deregister, cleanup, reset) may take.
constexpr std::chrono::milliseconds kControlTimeout(60000);
// How often discovery says that it still waits for the task.
constexpr std::chrono::milliseconds kDiscoveryLogInterval(10000);
// A step's RPC outlives the step's own deadline by this much, so that the task's
// DeadlineExceeded, which names the node, comes back before the RPC's.
constexpr std::chrono::milliseconds kStepRpcGrace(5000);

}  // namespace

struct GrpcWorker::Stub {
  std::shared_ptr<rpc::WorkerService::Stub> stub;
};

// One RunGraph RPC. It owns what the RPC uses until gRPC calls back; the master's handle on
// it only cancels, and may outlive it.
class GrpcWorker::Call final : public RunGraphCall {
 public:
  struct State {
    std::unique_ptr<grpc::ClientContext> context;
    rpc::RunGraphRequest request;
    rpc::RunGraphResponse response;
    std::atomic<bool> cancelled_here{false};
  };
  explicit Call(std::shared_ptr<State> state) : state_(std::move(state)) {}
  void Cancel() override {
    state_->cancelled_here = true;
    state_->context->TryCancel();
  }

 private:
  const std::shared_ptr<State> state_;
};

GrpcWorker::GrpcWorker(std::string task, std::string address, std::shared_ptr<grpc::Channel> channel,
                       std::shared_ptr<WorkerChannels> channels)
    : WorkerInterface(std::move(task)),
      address_(std::move(address)),
      stub_(std::make_unique<Stub>(Stub{rpc::WorkerService::NewStub(std::move(channel))})),
      channels_(std::move(channels)) {}

GrpcWorker::~GrpcWorker() { CleanupSteps(TakeDeferredCleanups()); }

StatusOr<std::vector<RemoteDevice>> GrpcWorker::GetDevices(std::chrono::milliseconds timeout) {
  rpc::GetStatusResponse response;
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    auto context = channels_->NewContext(std::min(left, kDiscoveryLogInterval));
    context->set_wait_for_ready(true);
    grpc::Status st = SendTheRequest(stub_->stub->GetStatus(context.get(), &response), rpc::GetStatusRequest());
    if (st.ok()) break;
    if (st.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED || left <= kDiscoveryLogInterval) {
      return FromGrpc(st, *context, task());
    }
    Log(LogSeverity::kInfo, StrCat("CreateSession still waiting for response from task: ", task()));
  }
  if (response.task() != task()) {
    return errors::FailedPrecondition("The cluster names ", address_, " ", task(), ", but the server there is ",
                                      response.task());
  }
  std::vector<RemoteDevice> devices;
  for (const rpc::DeviceAttributes& a : response.devices()) devices.push_back(DecodeDevice(a));
  return devices;
}

StatusOr<std::string> GrpcWorker::RegisterGraph(
    std::vector<std::pair<std::string, std::unique_ptr<Graph>>> partitions, std::chrono::milliseconds timeout) {
  rpc::RegisterGraphRequest request;
  for (auto& [device, graph] : partitions) {
    rpc::PartitionGraph* p = request.add_partitions();
    p->set_device(device);
    p->set_graph_json(GraphSpecToJson(graph->ToSpec()));
    graph.reset();
  }
  rpc::RegisterGraphResponse response;
  auto context = channels_->NewContext(timeout.count() > 0 ? std::min(timeout, kControlTimeout) : kControlTimeout);
  RETURN_IF_ERROR(FromGrpc(SendTheRequest(stub_->stub->RegisterGraph(context.get(), &response), request), *context, task()));
  return response.graph_handle();
}

void GrpcWorker::DeregisterGraph(const std::string& handle) {
  rpc::DeregisterGraphRequest request;
  request.set_graph_handle(handle);
  rpc::DeregisterGraphResponse response;
  auto context = channels_->NewContext(std::chrono::milliseconds(5000));
  (void)SendTheRequest(stub_->stub->DeregisterGraph(context.get(), &response), request);
}

std::unique_ptr<RunGraphCall> GrpcWorker::RunGraphAsync(RunGraphRequest request, RunGraphDone done) {
  auto state = std::make_shared<Call::State>();
  state->context = channels_->NewContext(request.timeout.count() > 0 ? request.timeout + kStepRpcGrace
                                                                     : std::chrono::milliseconds(0));
  state->request.set_graph_handle(request.handle);
  state->request.set_step_id(request.step_id);
  state->request.set_timeout_in_ms(request.timeout.count());
  for (const auto& [index, value] : request.args) {
    StatusOr<std::string> bytes = EncodeTensor(value);
    if (!bytes.ok()) {
      done(Status(bytes.status().code(), StrCat("feed '", request.names[index], "': ", bytes.status().message())), {});
      return std::make_unique<Call>(std::move(state));
    }
    rpc::IndexedTensor* arg = state->request.add_args();
    arg->set_index(index);
    arg->set_tensor(std::move(*bytes));
  }
  for (int64_t id : TakeDeferredCleanups()) state->request.add_cleanup_step_ids(id);
  auto call = std::make_unique<Call>(state);
  auto* rpc = new OneRequestCall<rpc::RunGraphRequest>(
      &state->request, [this, state, done = std::move(done)](const grpc::Status& st) {
        Status s = FromGrpc(st, *state->context, task(), state->cancelled_here);
        std::map<int, Tensor> retvals;
        for (const rpc::IndexedTensor& r : state->response.retvals()) {
          if (!s.ok()) break;
          StatusOr<Tensor> t = DecodeTensor(r.tensor());
          if (!t.ok()) s = t.status();
          else retvals[r.index()] = *std::move(t);
        }
        // The cleanups the call carried may not have reached the task: they go on their own.
        if (!s.ok()) {
          CleanupSteps({state->request.cleanup_step_ids().begin(), state->request.cleanup_step_ids().end()});
        }
        done(s, std::move(retvals));
      });
  stub_->stub->async()->RunGraph(state->context.get(), &state->response, rpc);
  rpc->Start();
  return call;
}

void GrpcWorker::DeferCleanup(int64_t step_id) {
  std::vector<int64_t> overflow;
  {
    std::lock_guard<std::mutex> lock(cleanup_mu_);
    deferred_cleanups_.push_back(step_id);
    if (deferred_cleanups_.size() >= kMaxDeferredCleanups) overflow.swap(deferred_cleanups_);
  }
  CleanupSteps(std::move(overflow));
}

std::vector<int64_t> GrpcWorker::TakeDeferredCleanups() {
  std::lock_guard<std::mutex> lock(cleanup_mu_);
  return std::exchange(deferred_cleanups_, {});
}

void GrpcWorker::CleanupSteps(std::vector<int64_t> step_ids) {
  if (step_ids.empty()) return;
  struct Call {
    std::shared_ptr<rpc::WorkerService::Stub> stub;
    std::unique_ptr<grpc::ClientContext> context;
    rpc::CleanupStepRequest request;
    rpc::CleanupStepResponse response;
  };
  auto* call = new Call{stub_->stub, channels_->NewContext(kControlTimeout), {}, {}};
  call->request.mutable_step_ids()->Add(step_ids.begin(), step_ids.end());
  auto* rpc = new OneRequestCall<rpc::CleanupStepRequest>(&call->request, [call](const grpc::Status&) { delete call; });
  call->stub->async()->CleanupStep(call->context.get(), &call->response, rpc);
  rpc->Start();
}

Status GrpcWorker::ResetContainers(const std::vector<std::string>& containers) {
  rpc::ResetContainersRequest request;
  for (const std::string& c : containers) request.add_containers(c);
  rpc::ResetContainersResponse response;
  auto context = channels_->NewContext(std::chrono::milliseconds(10000));
  return FromGrpc(SendTheRequest(stub_->stub->ResetContainers(context.get(), &response), request), *context, task());
}

}  // namespace tessera
