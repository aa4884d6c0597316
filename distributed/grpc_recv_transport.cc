#include "distributed/grpc_recv_transport.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <mutex>

#include "distributed/protos/worker_service.grpc.pb.h"
#include "distributed/recv_tensor_wire.h"
#include "distributed/rpc_util.h"
#include "distributed/worker_channels.h"

namespace tessera {
namespace {

// RecvTensor's full name, for the generic stub that reads the response's raw bytes.
const std::string& RecvTensorMethod() {
  static const std::string* method = new std::string(StrCat("/", rpc::WorkerService::service_full_name(), "/RecvTensor"));
  return *method;
}

}  // namespace

// One RecvTensor stream. It holds itself from Start until gRPC is done with it.
class GrpcRecvTransport::Call final : public Recv,
                                      public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                                      public std::enable_shared_from_this<Call> {
 public:
  Call(std::shared_ptr<grpc::Channel> channel, std::unique_ptr<grpc::ClientContext> context, const std::string& key,
       std::string peer, int64_t step_id, Rendezvous::DoneCallback done)
      : channel_(std::move(channel)), context_(std::move(context)), peer_(std::move(peer)), done_(std::move(done)) {
    rpc::RecvTensorRequest request;
    request.set_step_id(step_id);
    request.set_rendezvous_key(key);
    grpc::Slice bytes(request.SerializeAsString());
    request_ = grpc::ByteBuffer(&bytes, 1);
  }

  void Start() override {
    self_ = shared_from_this();
    grpc::GenericStub stub(channel_);
    stub.PrepareBidiStreamingCall(context_.get(), RecvTensorMethod(), grpc::StubOptions(), this);
    StartWriteLast(&request_, grpc::WriteOptions());
    StartRead(&part_);
    StartCall();
  }
  void Cancel() override {
    cancelled_here_ = true;
    context_->TryCancel();
  }

  // The receiver has its tensor as soon as the last element is in, without waiting for
  // the status that follows.
  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ended: OnDone says how
    assembled_ = assembler_.Add(part_);
    if (!assembled_.ok()) {
      cancelled_here_ = true;
      context_->TryCancel();
      return;
    }
    if (!delivered_ && assembler_.Complete()) Assembled(Status::OK());
    StartRead(&part_);
  }

  void OnDone(const grpc::Status& s) override {
    if (!delivered_) Assembled(assembled_.ok() ? FromGrpc(s, *context_, peer_, cancelled_here_) : assembled_);
    self_.reset();  // may be the last hold on this
  }

 private:
  void Assembled(Status status) {
    delivered_ = true;
    Tensor value;
    if (status.ok()) {
      StatusOr<Tensor> tensor = assembler_.Finish();
      status = tensor.status();
      if (tensor.ok()) value = *std::move(tensor);
    }
    // Released now, not when the stream ends: what it holds belongs to a step that may
    // be over before the status arrives.
    Rendezvous::DoneCallback done = std::move(done_);
    done(status, value);
  }

  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<grpc::ClientContext> context_;
  const std::string peer_;
  Rendezvous::DoneCallback done_;  // until called
  std::shared_ptr<Call> self_;  // from Start to OnDone
  grpc::ByteBuffer request_;
  grpc::ByteBuffer part_;
  RecvTensorAssembler assembler_;
  Status assembled_;        // the first part that would not assemble
  bool delivered_ = false;  // done_ has been called
  std::atomic<bool> cancelled_here_{false};
};

GrpcRecvTransport::GrpcRecvTransport(std::shared_ptr<grpc::Channel> channel, std::string peer, std::string token)
    : channel_(std::move(channel)), peer_(std::move(peer)), token_(std::move(token)) {}

std::shared_ptr<RecvTransport::Recv> GrpcRecvTransport::NewRecv(int64_t step_id, std::string key,
                                                                std::chrono::milliseconds timeout, Tensor,
                                                                Rendezvous::DoneCallback done) {
  return std::make_shared<Call>(channel_, NewCallContext(token_, timeout), key, peer_, step_id, std::move(done));
}

}  // namespace tessera
