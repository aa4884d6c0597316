#include "distributed/remote_rendezvous.h"

#include <vector>

#include "distributed/cluster_spec.h"
#include "graph/device_name.h"

namespace tessera {

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
  std::vector<std::shared_ptr<RecvTransport::Recv>> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, call] : in_flight_) calls.push_back(call);
  }
  // Outside mu_: a cancelled direct receive finishes on this thread.
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
  StatusOr<std::shared_ptr<RecvTransport>> transport = channels_->RecvTransportFor(device->job, device->task);
  if (!transport.ok()) {
    done(transport.status(), Tensor());
    return;
  }
  // The error names the key and the task asked.
  const auto deliver = [key = std::string(key), peer, done = std::move(done)](const Status& s, const Tensor& value) {
    if (s.ok()) {
      done(s, value);
    } else {
      done(Status(s.code(), StrCat("receiving '", key, "' from ", peer, ": ", s.message())), Tensor());
    }
  };
  std::shared_ptr<RecvTransport::Recv> recv;
  Status aborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted = aborted_;
    if (aborted.ok()) {
      const uint64_t id = ++last_id_;
      recv = (*transport)->NewRecv(step_id_, std::string(key), timeout_, args.into,
                                   [this, id, deliver](const Status& s, const Tensor& value) {
                                     deliver(s, value);
                                     Finish(id);
                                   });
      in_flight_.emplace(id, recv);
    }
  }
  if (!aborted.ok()) {
    deliver(aborted, Tensor());
    return;
  }
  recv->Start();
}

void RemoteRendezvous::Finish(uint64_t id) {
  std::shared_ptr<RecvTransport::Recv> finished;  // let go of outside mu_
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_flight_.find(id);
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
