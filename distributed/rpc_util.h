// What the cluster's RPC code shares: the token's metadata key and its comparison, and the
// mapping between our Status and gRPC's (the codes are the same numbers: TensorFlow took
// gRPC's). Internal to distributed/.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/client_callback.h>
#include <grpcpp/support/status.h>
#include <grpcpp/support/sync_stream.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string_view>

#include "graph/platform/status.h"

namespace tessera {

inline constexpr char kClusterTokenHeader[] = "tessera-cluster-token";

// Every connection between tasks is pinged this often, and dropped when a ping is not
// answered in the timeout: the heartbeat that finds a dead or frozen peer.
inline constexpr int kHeartbeatIntervalMs = 5000;
inline constexpr int kHeartbeatTimeoutMs = 5000;

// Whether a and b are equal, in time that depends on their lengths only: how a token is
// checked.
inline bool SameToken(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

inline grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// Every call's request is a stream of one message (worker_service.proto says why): the
// handler checks the token, then reads it with ReadTheRequest; a client sends it with
// SendTheRequest, or OneRequestCall from a callback.
template <typename Request>
grpc::Status ReadTheRequest(grpc::ServerReader<Request>* reader, Request* request) {
  if (!reader->Read(request)) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the call carried no request");
  return grpc::Status::OK;
}

// `writer` is the call a stub started, e.g. stub->GetStatus(&context, &response).
template <typename Request>
grpc::Status SendTheRequest(std::unique_ptr<grpc::ClientWriter<Request>> writer, const Request& request) {
  // A refusal ends the call before the request is written: Finish says why.
  (void)writer->Write(request, grpc::WriteOptions().set_last_message());
  return writer->Finish();
}

// A call of a stub's async() that sends `request` and calls `done` on gRPC's thread with its
// status; it deletes itself then. `request` must live until `done`.
//   auto* call = new OneRequestCall<rpc::RunGraphRequest>(&state->request, done);
//   stub->async()->RunGraph(context, &state->response, call);
//   call->Start();
template <typename Request>
class OneRequestCall final : public grpc::ClientWriteReactor<Request> {
 public:
  OneRequestCall(const Request* request, std::function<void(const grpc::Status&)> done)
      : request_(request), done_(std::move(done)) {}
  void Start() {
    this->StartWrite(request_, grpc::WriteOptions().set_last_message());
    this->StartCall();
  }
  void OnDone(const grpc::Status& status) override {
    done_(status);
    delete this;
  }

 private:
  const Request* const request_;
  const std::function<void(const grpc::Status&)> done_;
};

// Every handler marks its call's trailers with kAnsweredHeader first, so that a caller can
// tell an Unavailable or DeadlineExceeded the server relayed (naming the task that failed)
// from one that means the server itself did not answer. (A server interceptor did this;
// with it, gRPC 1.51 aborted on a reference count now and then when a server stopped.)
inline constexpr char kAnsweredHeader[] = "tessera-answered";
inline void MarkAnswered(grpc::ServerContextBase* context) { context->AddTrailingMetadata(kAnsweredHeader, "1"); }

// gRPC 1.51 runs callback calls on one queue for the process, made when the first channel or
// server needs it and freed when the last lets go; when that happens on one of the queue's
// own threads (a channel whose last holder is a call that just ended there), the queue is
// freed twice. A channel that never goes, once it has made a callback call, holds the queue
// for good. Called wherever channels or servers are made; only the first call does anything.
void HoldGrpcCallbackQueue();

// The call's status as ours. `peer` names who was asked: an Unavailable or
// DeadlineExceeded it did not answer itself says "<peer> did not answer". A Cancelled it
// did not answer, when this side did not cancel (`cancelled_here`), is the peer's server
// stopping with the call in flight: Unavailable, as a peer that is gone.
Status FromGrpc(const grpc::Status& s, const grpc::ClientContext& context, std::string_view peer,
                bool cancelled_here = false);

}  // namespace tessera
