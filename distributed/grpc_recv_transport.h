// GrpcRecvTransport: receives over another task's RecvTensor stream (recv_tensor_wire.h):
// the tensor's parts are copied into it as they come, each while the next is on its way,
// and the receiver has it as soon as the last part is in, before the call's status.
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "distributed/recv_transport.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace tessera {

class GrpcRecvTransport final : public RecvTransport {
 public:
  // `peer` names the task in errors; every call carries `token` (when set).
  GrpcRecvTransport(std::shared_ptr<grpc::Channel> channel, std::string peer, std::string token);

  std::shared_ptr<Recv> NewRecv(int64_t step_id, std::string key, std::chrono::milliseconds timeout, Tensor into,
                                Rendezvous::DoneCallback done) override;

 private:
  class Call;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::string peer_;
  const std::string token_;
};

}  // namespace tessera
