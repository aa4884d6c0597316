// RemoteRendezvous: one step's rendezvous for a task of a cluster. Sends stay in this
// process (the task's own rendezvous); a receive whose key names a device of another task
// asks that task for the tensor by RPC (RecvTensor), which answers once its device has sent
// it. Kernels and executors see only the Rendezvous interface, so they do not change. The
// tensor comes over the transport WorkerChannels chose for that task (recv_transport.h):
// the direct transport for a task that serves it, gRPC otherwise.
//
//   auto channels = std::make_shared<WorkerChannels>(cluster, token);
//   RemoteRendezvous r(local_step_rendezvous, "worker", 0, channels, step_id, timeout);
//   r.RecvAsync(Rendezvous::CreateKey("/job:ps/replica:0/task:0/device:CPU:0", inc,
//                                     "/job:worker/replica:0/task:0/device:CPU:0", "w:0"), done);
//
// A remote receive fails with the other task's error (the step aborted there), Unavailable
// naming the task when it does not answer within `timeout`, or the abort status after
// StartAbort, which also cancels the RPCs in flight. Thread-safe, as every Rendezvous.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <map>
#include <string>

#include "distributed/worker_channels.h"
#include "kernels/rendezvous.h"

namespace tessera {

class RemoteRendezvous final : public Rendezvous {
 public:
  RemoteRendezvous(std::shared_ptr<Rendezvous> local, std::string job, int task,
                   std::shared_ptr<WorkerChannels> channels, int64_t step_id, std::chrono::milliseconds timeout);
  ~RemoteRendezvous() override;

  using Rendezvous::RecvAsync;
  using Rendezvous::Send;
  Status Send(std::string_view key, const Args& args, const Tensor& value) override;
  void RecvAsync(std::string_view key, const Args& args, DoneCallback done) override;
  void StartAbort(const Status& status) override;

 private:
  // A receive in flight has ended.
  void Finish(uint64_t id);
  // Cancels every call in flight; they come back through Finish.
  void CancelCalls();

  const std::shared_ptr<Rendezvous> local_;
  const std::string job_;
  const int task_;
  const std::shared_ptr<WorkerChannels> channels_;
  const int64_t step_id_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable idle_;  // in_flight_ became empty
  // Shared so that a receive can be cancelled outside mu_ while it ends on another thread.
  std::map<uint64_t, std::shared_ptr<RecvTransport::Recv>> in_flight_;  // guarded by mu_
  uint64_t last_id_ = 0;                                                 // guarded by mu_
  Status aborted_;                                                       // guarded by mu_
};

}  // namespace tessera
