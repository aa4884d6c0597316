#include "distributed/remote_rendezvous.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <vector>

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

// A receive from another task, in flight from Start until it calls Finish.
class RemoteRendezvous::Call {
 public:
  Call(RemoteRendezvous* owner, std::string key, std::string peer, DoneCallback done)
      : owner_(owner), key_(std::move(key)), peer_(std::move(peer)), done_(std::move(done)) {}
  virtual ~Call() = default;
  // The caller holds the call, which may finish before Start returns.
  virtual void Start() = 0;
  virtual void Cancel() = 0;
  // Ends a call that never started.
  void Fail(const Status& status) { done_(status, Tensor()); }

 protected:
  // Hands the receiver its tensor, or the error naming the key and the task asked.
  void Deliver(const Status& status, const Tensor& value) {
    if (status.ok()) {
      done_(status, value);
      return;
    }
    done_(Status(status.code(), StrCat("receiving '", key_, "' from ", peer_, ": ", status.message())), Tensor());
  }

  RemoteRendezvous* const owner_;
  const std::string key_;
  const std::string peer_;  // "/job:ps/replica:0/task:0"

 private:
  const DoneCallback done_;
};

// One RecvTensor stream: its parts are copied into the tensor as they come, each while the
// next is still on its way.
class RemoteRendezvous::GrpcCall final : public Call,
                                         public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  GrpcCall(RemoteRendezvous* owner, std::shared_ptr<grpc::Channel> channel, std::unique_ptr<grpc::ClientContext> context,
           std::string key, std::string peer, int64_t step_id, DoneCallback done)
      : Call(owner, std::move(key), std::move(peer), std::move(done)),
        channel_(std::move(channel)),
        context_(std::move(context)) {
    rpc::RecvTensorRequest request;
    request.set_step_id(step_id);
    request.set_rendezvous_key(key_);
    grpc::Slice bytes(request.SerializeAsString());
    request_ = grpc::ByteBuffer(&bytes, 1);
  }

  void Start() override {
    grpc::GenericStub stub(channel_);
    stub.PrepareBidiStreamingCall(context_.get(), RecvTensorMethod(), grpc::StubOptions(), this);
    StartWriteLast(&request_, grpc::WriteOptions());
    StartRead(&part_);
    StartCall();
  }
  void Cancel() override { context_->TryCancel(); }

  // The receiver has its tensor as soon as the last element is in, without waiting for
  // the status that follows.
  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ended: OnDone says how
    assembled_ = assembler_.Add(part_);
    if (!assembled_.ok()) {
      context_->TryCancel();
      return;
    }
    if (!delivered_ && assembler_.Complete()) Assembled(Status::OK());
    StartRead(&part_);
  }

  void OnDone(const grpc::Status& s) override {
    if (!delivered_) Assembled(assembled_.ok() ? FromGrpc(s, peer_) : assembled_);
    owner_->Finish(this);
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
    Deliver(status, value);
  }

  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<grpc::ClientContext> context_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer part_;
  RecvTensorAssembler assembler_;
  Status assembled_;  // the first part that would not assemble
  bool delivered_ = false;  // done_ has been called
};

// One receive over the same-host transport.
class RemoteRendezvous::SameHostCall final : public Call {
 public:
  SameHostCall(RemoteRendezvous* owner, std::shared_ptr<SameHostClient> client, std::string key, std::string peer,
               Tensor into, DoneCallback done)
      : Call(owner, std::move(key), std::move(peer), std::move(done)), client_(std::move(client)), into_(std::move(into)) {}

  void Start() override {
    const uint64_t id =
        client_->Recv(owner_->step_id_, key_, owner_->timeout_, into_, [this](const Status& s, const Tensor& value) {
          Deliver(s, value);
          owner_->Finish(this);
        });
    id_.store(id);
    if (cancelled_.load()) client_->Cancel(id, Cancelled());
  }
  // Whichever of Start and Cancel comes second cancels the receive.
  void Cancel() override {
    cancelled_.store(true);
    if (const uint64_t id = id_.load(); id != 0) client_->Cancel(id, Cancelled());
  }

 private:
  static Status Cancelled() { return errors::Cancelled("the receive was given up"); }

  const std::shared_ptr<SameHostClient> client_;
  const Tensor into_;
  std::atomic<uint64_t> id_{0};
  std::atomic<bool> cancelled_{false};
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
  CancelCalls();
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return in_flight_.empty(); });
}

void RemoteRendezvous::CancelCalls() {
  std::vector<std::shared_ptr<Call>> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [raw, call] : in_flight_) calls.push_back(call);
  }
  // Outside mu_: a cancelled same-host receive finishes on this thread.
  for (const auto& call : calls) call->Cancel();
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
  const std::string peer = TaskName(device->job, device->task);
  std::shared_ptr<Call> call;
  if (std::shared_ptr<SameHostClient> client = channels_->SameHost(device->job, device->task); client != nullptr) {
    call = std::make_shared<SameHostCall>(this, std::move(client), std::string(key), peer, args.into, std::move(done));
  } else {
    StatusOr<std::shared_ptr<grpc::Channel>> channel = channels_->ForTask(device->job, device->task);
    if (!channel.ok()) {
      done(channel.status(), Tensor());
      return;
    }
    call = std::make_shared<GrpcCall>(this, std::move(*channel), channels_->NewContext(timeout_), std::string(key), peer,
                                      step_id_, std::move(done));
  }
  Status aborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted = aborted_;
    if (aborted.ok()) in_flight_.emplace(call.get(), call);
  }
  if (!aborted.ok()) {
    call->Fail(aborted);
    return;
  }
  call->Start();
}

void RemoteRendezvous::Finish(Call* call) {
  std::shared_ptr<Call> finished;  // let go of outside mu_
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_flight_.find(call);
  finished = std::move(it->second);
  in_flight_.erase(it);
  if (in_flight_.empty()) idle_.notify_all();
}

void RemoteRendezvous::StartAbort(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_.ok()) aborted_ = status;
  }
  CancelCalls();
  local_->StartAbort(status);
}

}  // namespace tessera
