#include "distributed/rpc_util.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>

namespace tessera {

void HoldGrpcCallbackQueue() {
  // Never destroyed: they must outlive every other gRPC object of the process.
  struct Held {
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateChannel("unix:/tessera-holds-the-callback-queue", grpc::InsecureChannelCredentials());
    grpc::GenericStub stub{channel};
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
  };
  static Held* held = [] {
    auto* h = new Held();
    h->context.set_deadline(std::chrono::system_clock::now());
    grpc::Slice nothing(std::string{});
    h->request = grpc::ByteBuffer(&nothing, 1);
    h->stub.UnaryCall(&h->context, "/tessera.Hold/Queue", grpc::StubOptions(), &h->request, &h->response,
                      [](grpc::Status) {});
    return h;
  }();
  (void)held;
}

Status FromGrpc(const grpc::Status& s, const grpc::ClientContext& context, std::string_view peer,
                bool cancelled_here) {
  if (s.ok()) return Status::OK();
  const Code code = static_cast<Code>(s.error_code());
  const bool answered = context.GetServerTrailingMetadata().count(kAnsweredHeader) > 0;
  if (!answered && code == Code::kCancelled && !cancelled_here) {
    return errors::Unavailable(peer, " stopped serving the call: ", s.error_message());
  }
  if (!answered && (code == Code::kUnavailable || code == Code::kDeadlineExceeded)) {
    return Status(code, StrCat(peer, " did not answer: ", s.error_message()));
  }
  return Status(code, s.error_message());
}

}  // namespace tessera
