// RecvTransport: how a task fetches a tensor that another task of its step sent: the gRPC
// RecvTensor stream (grpc_recv_transport.h), or the direct transport (direct_transport.h:
// a Unix socket between tasks of one machine, TCP between machines). WorkerChannels (worker_channels.h) chooses one
// for each peer; the remote rendezvous sees only this interface.
//
//   std::shared_ptr<RecvTransport> transport = *channels->RecvTransportFor("ps", 0);
//   auto recv = transport->NewRecv(step_id, key, timeout, into, done);
//   recv->Start();           // done(status, tensor) once; recv->Cancel() ends it early
//
// Implementations are thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/rendezvous.h"

namespace tessera {

class RecvTransport {
 public:
  // One receive. Start it once; Cancel may come at any time, from any thread, before or
  // after Start and after the receive ended, and ends a receive in flight through `done`.
  class Recv {
   public:
    virtual ~Recv() = default;
    virtual void Start() = 0;
    virtual void Cancel() = 0;
  };

  virtual ~RecvTransport() = default;
  // A receive of `key` of step `step_id` from the peer. `done` is called exactly once, perhaps
  // before Start returns: with the tensor (read into `into` when it has that tensor's dtype
  // and shape), the peer's error, Unavailable or DeadlineExceeded (past `timeout`; none when
  // 0) naming the peer, or Cancelled. After `done` the receive touches nothing of its caller.
  virtual std::shared_ptr<Recv> NewRecv(int64_t step_id, std::string key, std::chrono::milliseconds timeout,
                                        Tensor into, Rendezvous::DoneCallback done) = 0;
};

}  // namespace tessera
