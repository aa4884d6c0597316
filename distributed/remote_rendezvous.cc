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

struct RemoteRendezvous::Call {
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::GenericStub> stub;
  std::string key;
  grpc::ByteBuffer request;
  grpc::ByteBuffer response;
  std::string peer;  // "/job:ps/replica:0/task:0"
  DoneCallback done;
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
  for (Call* call : in_flight_) call->context->TryCancel();
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
  auto call = std::make_unique<Call>();
  call->context = channels_->NewContext(timeout_);
  call->stub = std::make_unique<grpc::GenericStub>(*channel);
  call->key = std::string(key);
  rpc::RecvTensorRequest request;
  request.set_step_id(step_id_);
  request.set_rendezvous_key(call->key);
  grpc::Slice request_bytes(request.SerializeAsString());
  call->request = grpc::ByteBuffer(&request_bytes, 1);
  call->peer = TaskName(device->job, device->task);
  call->done = std::move(done);
  Call* raw = call.get();
  Status aborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted = aborted_;
    if (aborted.ok()) in_flight_.insert(call.release());
  }
  if (!aborted.ok()) {
    raw->done(aborted, Tensor());
    return;
  }
  raw->stub->UnaryCall(raw->context.get(), RecvTensorMethod(), grpc::StubOptions(), &raw->request, &raw->response,
                       [this, raw](grpc::Status s) {
                         Status status = FromGrpc(s, raw->peer);
                         Tensor value;
                         if (status.ok()) {
                           StatusOr<Tensor> decoded = DecodeRecvTensorResponse(raw->response);
                           status = decoded.status();
                           if (decoded.ok()) value = *std::move(decoded);
                         }
                         if (!status.ok()) {
                           status = Status(status.code(), StrCat("receiving '", raw->key, "' from ", raw->peer, ": ",
                                                                 status.message()));
                         }
                         raw->done(status, value);
                         Finish(raw);
                       });
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
    for (Call* call : in_flight_) call->context->TryCancel();
  }
  local_->StartAbort(status);
}

}  // namespace tessera
