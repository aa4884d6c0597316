#include "distributed/remote_rendezvous.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "distributed/protos/worker_service.grpc.pb.h"
#include "distributed/recv_tensor_wire.h"
#include "distributed/rpc_util.h"
#include "graph/device_name.h"

namespace tessera {

// RecvTensor's full name, for the generic stub that reads the response's raw bytes.
const std::string& RecvTensorMethod() {
  static const std::string* method = new std::string(StrCat("/", rpc::WorkerService::service_full_name(), "/RecvTensor"));
  return *method;
}

// One RecvTensor stream: its parts are copied into the tensor as they come, each while the
// next is still on its way.
class RemoteRendezvous::Call final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  Call(RemoteRendezvous* owner, std::unique_ptr<grpc::ClientContext> context, std::string key, std::string peer,
       int64_t step_id, DoneCallback done)
      : owner_(owner), context_(std::move(context)), key_(std::move(key)), peer_(std::move(peer)), done_(std::move(done)) {
    rpc::RecvTensorRequest request;
    request.set_step_id(step_id);
    request.set_rendezvous_key(key_);
    grpc::Slice bytes(request.SerializeAsString());
    request_ = grpc::ByteBuffer(&bytes, 1);
  }

  void Start(const std::shared_ptr<grpc::Channel>& channel) {
    grpc::GenericStub stub(channel);
    stub.PrepareBidiStreamingCall(context_.get(), RecvTensorMethod(), grpc::StubOptions(), this);
    StartWriteLast(&request_, grpc::WriteOptions());
    StartRead(&part_);
    StartCall();
  }
  void Cancel() { context_->TryCancel(); }
  void Fail(const Status& status) { done_(status, Tensor()); }

  // The receiver has its tensor as soon as the last element is in, without waiting for
  // the status that follows.
  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ended: OnDone says how
    assembled_ = assembler_.Add(part_);
    if (!assembled_.ok()) {
      context_->TryCancel();
      return;
    }
    if (!delivered_ && assembler_.Complete()) Deliver(Status::OK());
    StartRead(&part_);
  }

  void OnDone(const grpc::Status& s) override {
    if (!delivered_) Deliver(assembled_.ok() ? FromGrpc(s, peer_) : assembled_);
    owner_->Finish(this);
  }

 private:
  void Deliver(Status status) {
    delivered_ = true;
    Tensor value;
    if (status.ok()) {
      StatusOr<Tensor> tensor = assembler_.Finish();
      status = tensor.status();
      if (tensor.ok()) value = *std::move(tensor);
    }
    if (!status.ok()) {
      status = Status(status.code(), StrCat("receiving '", key_, "' from ", peer_, ": ", status.message()));
    }
    done_(status, value);
  }

  RemoteRendezvous* const owner_;
  const std::unique_ptr<grpc::ClientContext> context_;
  const std::string key_;
  const std::string peer_;  // "/job:ps/replica:0/task:0"
  const DoneCallback done_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer part_;
  RecvTensorAssembler assembler_;
  Status assembled_;  // the first part that would not assemble
  bool delivered_ = false;  // done_ has been called
};

RemoteRendezvous::RemoteRendezvous(std::shared_ptr<Rendezvous> local, std::string job, int task,
                                   std::shared_ptr<WorkerChannels> channels, int64_t step_id,
                                   std::chrono::milliseconds timeout)
    : local_(std::move(local)),
      job_(std::move(job)),
      task_(task),
      channels_(std::move(channels)),
      step_id_(step_id),
      timeout_(timeout) {}

RemoteRendezvous::~RemoteRendezvous() {
  // The calls' callbacks use this object: cancel them and wait for them to come back. The
  // task's own rendezvous is left as it is: other tasks may still fetch what was sent here.
  std::unique_lock<std::mutex> lock(mu_);
  for (Call* call : in_flight_) call->Cancel();
  idle_.wait(lock, [this] { return in_flight_.empty(); });
}

Status RemoteRendezvous::Send(std::string_view key, const Args& args, const Tensor& value) {
  return local_->Send(key, args, value);
}

void RemoteRendezvous::RecvAsync(std::string_view key, const Args& args, DoneCallback done) {
  const std::string_view src = key.substr(0, key.find(';'));
  StatusOr<DeviceName> device = DeviceName::Parse(src);
  if (!device.ok()) {
    done(errors::InvalidArgument("rendezvous key '", key, "' does not start with a device: ", device.status().message()),
         Tensor());
    return;
  }
  if (device->job == job_ && device->task == task_) {
    local_->RecvAsync(key, args, std::move(done));
    return;
  }
  if (!IsHostMemory(args.device, args.alloc_attrs)) {
    done(errors::Unimplemented("receiving from another task into device memory (", src, ")"), Tensor());
    return;
  }
  StatusOr<std::shared_ptr<grpc::Channel>> channel = channels_->ForTask(device->job, device->task);
  if (!channel.ok()) {
    done(channel.status(), Tensor());
    return;
  }
  auto call = std::make_unique<Call>(this, channels_->NewContext(timeout_), std::string(key),
                                     TaskName(device->job, device->task), step_id_, std::move(done));
  Call* raw = call.get();
  Status aborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted = aborted_;
    if (aborted.ok()) in_flight_.insert(call.release());
  }
  if (!aborted.ok()) {
    raw->Fail(aborted);
    return;
  }
  raw->Start(*channel);
}

void RemoteRendezvous::Finish(Call* call) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase(call);
  delete call;
  if (in_flight_.empty()) idle_.notify_all();
}

void RemoteRendezvous::StartAbort(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_.ok()) aborted_ = status;
    for (Call* call : in_flight_) call->Cancel();
  }
  local_->StartAbort(status);
}

}  // namespace tessera
