#include "distributed/worker_service.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "distributed/protos/worker_service.grpc.pb.h"
#include "distributed/recv_tensor_wire.h"
#include "distributed/rpc_decode.h"
#include "distributed/rpc_util.h"
#include "graph/platform/rate_limited_log.h"
#include "graph/serialize/tensor_codec.h"

namespace tessera {
namespace {

// One RecvTensor call: once the token is checked it reads the request, then waits, with no
// thread blocked, for the step's tensor (or error) in the rendezvous, and writes the
// tensor's parts one after another, each once the last has gone. The receiver may cancel at
// any time. Exactly one of the rendezvous callback, a finished write and the cancellation
// acts on the call at a time: whichever finds it idle.
class RecvTensorStream final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // `ask` hands the request and the answer's callback to the rendezvous.
  using Ask = std::function<void(const grpc::ByteBuffer& request, Rendezvous::DoneCallback answer)>;
  explicit RecvTensorStream(Ask ask) : ask_(std::move(ask)), state_(std::make_shared<State>(this)) {}

  void ReadRequest() { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      state_->Fail(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the call carried no request"));
      return;
    }
    ask_(request_, OnTensor());
  }

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
  const Ask ask_;
  grpc::ByteBuffer request_;
  const std::shared_ptr<State> state_;
};

class WorkerService final : public rpc::WorkerService::WithRawCallbackMethod_RecvTensor<rpc::WorkerService::Service> {
 public:
  WorkerService(std::string task_name, std::shared_ptr<Server> local, std::shared_ptr<GraphMgr> graphs,
                const Authenticator& auth, size_t max_pending_receives, uint16_t direct_port)
      : task_name_(std::move(task_name)),
        local_(std::move(local)),
        graphs_(std::move(graphs)),
        auth_(auth),
        max_pending_receives_(max_pending_receives),
        direct_port_(direct_port) {}

  grpc::Status GetStatus(grpc::ServerContext* context, grpc::ServerReader<rpc::GetStatusRequest>* reader,
                         rpc::GetStatusResponse* response) override {
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "GetStatus"); !s.ok()) return ToGrpc(s);
    rpc::GetStatusRequest request;
    if (grpc::Status read = ReadTheRequest(reader, &request); !read.ok()) return read;
    response->set_task(task_name_);
    response->set_direct_port(direct_port_);
    for (const Device* d : local_->devices()->devices()) EncodeDevice(DescribeDevice(*d), response->add_devices());
    return grpc::Status::OK;
  }

  // Answers once the step's tensor is in this task's rendezvous, with parts that refer to
  // the tensor's memory rather than copies of it.
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* RecvTensor(grpc::CallbackServerContext* context) override {
    auto* call = new RecvTensorStream([this, peer = context->peer()](const grpc::ByteBuffer& request,
                                                                     Rendezvous::DoneCallback answer) {
      Ask(peer, request, std::move(answer));
    });
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "RecvTensor"); !s.ok()) {
      call->OnTensor()(s, Tensor());
      return call;
    }
    call->ReadRequest();
    return call;
  }

  grpc::Status RegisterGraph(grpc::ServerContext* context, grpc::ServerReader<rpc::RegisterGraphRequest>* reader,
                             rpc::RegisterGraphResponse* response) override {
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "RegisterGraph"); !s.ok()) return ToGrpc(s);
    rpc::RegisterGraphRequest request;
    if (grpc::Status read = ReadTheRequest(reader, &request); !read.ok()) return read;
    auto partitions = DecodePartitions(request);
    if (!partitions.ok()) return ToGrpc(partitions.status());
    StatusOr<std::string> handle = graphs_->Register(std::move(*partitions));
    if (!handle.ok()) return ToGrpc(handle.status());
    response->set_graph_handle(*handle);
    return grpc::Status::OK;
  }

  grpc::Status DeregisterGraph(grpc::ServerContext* context, grpc::ServerReader<rpc::DeregisterGraphRequest>* reader,
                               rpc::DeregisterGraphResponse*) override {
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "DeregisterGraph"); !s.ok()) return ToGrpc(s);
    rpc::DeregisterGraphRequest request;
    if (grpc::Status read = ReadTheRequest(reader, &request); !read.ok()) return read;
    return ToGrpc(graphs_->Deregister(request.graph_handle()));
  }

  grpc::Status RunGraph(grpc::ServerContext* context, grpc::ServerReader<rpc::RunGraphRequest>* reader,
                        rpc::RunGraphResponse* response) override {
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "RunGraph"); !s.ok()) return ToGrpc(s);
    rpc::RunGraphRequest request;
    if (grpc::Status read = ReadTheRequest(reader, &request); !read.ok()) return read;
    for (int64_t step_id : request.cleanup_step_ids()) graphs_->CleanupStep(step_id);
    StatusOr<std::map<int, Tensor>> args = DecodeArgs(request);
    if (!args.ok()) return ToGrpc(args.status());
    GraphMgr::StepOptions options;
    options.timeout = std::chrono::milliseconds(request.timeout_in_ms());
    options.abandoned = [context] { return context->IsCancelled(); };
    std::map<int, Tensor> retvals;
    Status s = graphs_->Run(request.graph_handle(), request.step_id(), *std::move(args), options, &retvals);
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

  grpc::Status CleanupStep(grpc::ServerContext* context, grpc::ServerReader<rpc::CleanupStepRequest>* reader,
                           rpc::CleanupStepResponse*) override {
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "CleanupStep"); !s.ok()) return ToGrpc(s);
    rpc::CleanupStepRequest request;
    if (grpc::Status read = ReadTheRequest(reader, &request); !read.ok()) return read;
    for (int64_t step_id : request.step_ids()) graphs_->CleanupStep(step_id);
    return grpc::Status::OK;
  }

  grpc::Status ResetContainers(grpc::ServerContext* context, grpc::ServerReader<rpc::ResetContainersRequest>* reader,
                               rpc::ResetContainersResponse*) override {
    MarkAnswered(context);
    if (Status s = auth_.Check(*context, "ResetContainers"); !s.ok()) return ToGrpc(s);
    rpc::ResetContainersRequest request;
    if (grpc::Status read = ReadTheRequest(reader, &request); !read.ok()) return read;
    local_->resources()->Cleanup({request.containers().begin(), request.containers().end()});
    return grpc::Status::OK;
  }

 private:
  const std::string task_name_;
  const std::shared_ptr<Server> local_;
  const std::shared_ptr<GraphMgr> graphs_;
  void Ask(const std::string& peer, const grpc::ByteBuffer& request_bytes, Rendezvous::DoneCallback answer) {
    rpc::RecvTensorRequest request;
    grpc::Slice bytes;
    if (!request_bytes.DumpToSingleSlice(&bytes).ok() || !request.ParseFromArray(bytes.begin(), bytes.size())) {
      answer(errors::InvalidArgument(task_name_, ": a RecvTensor request that does not parse"), Tensor());
      return;
    }
    // A receive holds memory here until its tensor comes: peers may not hold too many.
    if (pending_receives_->fetch_add(1) >= max_pending_receives_) {
      pending_receives_->fetch_sub(1);
      overloaded_.Log(LogSeverity::kWarning, StrCat(task_name_, " refused RecvTensor from ", peer, ": ",
                                                    max_pending_receives_, " receives already wait here"));
      answer(errors::ResourceExhausted(task_name_, " already holds ", max_pending_receives_,
                                       " receives waiting for their tensors"),
             Tensor());
      return;
    }
    Rendezvous::DoneCallback done = [pending = pending_receives_, answer = std::move(answer)](const Status& s,
                                                                                             const Tensor& value) {
      pending->fetch_sub(1);
      answer(s, value);
    };
    StatusOr<std::shared_ptr<Rendezvous>> rendezvous = local_->rendezvous()->FindForPeer(request.step_id());
    if (!rendezvous.ok()) {
      done(rendezvous.status(), Tensor());
      return;
    }
    (*rendezvous)->RecvAsync(request.rendezvous_key(), std::move(done));
  }

  const Authenticator& auth_;
  const size_t max_pending_receives_;
  const uint16_t direct_port_;
  // Shared with the receives' callbacks, which may outlive the service.
  const std::shared_ptr<std::atomic<size_t>> pending_receives_ = std::make_shared<std::atomic<size_t>>(0);
  RateLimitedLog overloaded_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewWorkerService(std::string task_name, std::shared_ptr<Server> local,
                                                std::shared_ptr<GraphMgr> graphs, const Authenticator& auth,
                                                size_t max_pending_receives, uint16_t direct_port) {
  return std::make_unique<WorkerService>(std::move(task_name), std::move(local), std::move(graphs), auth,
                                         max_pending_receives, direct_port);
}

}  // namespace tessera
