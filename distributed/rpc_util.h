// What the cluster's RPC code shares: the token's metadata key and the mapping between our
// Status and gRPC's (the codes are the same numbers: TensorFlow took gRPC's). Internal to
// distributed/.
#pragma once

#include <grpcpp/support/status.h>

#include <string_view>

#include "graph/platform/status.h"

namespace tessera {

inline constexpr char kClusterTokenHeader[] = "tessera-cluster-token";

// Every connection between tasks is pinged this often, and dropped when a ping is not
// answered in the timeout: the heartbeat that finds a dead or frozen peer.
inline constexpr int kHeartbeatIntervalMs = 5000;
inline constexpr int kHeartbeatTimeoutMs = 5000;

inline grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// `peer` names who was asked, for the errors that mean it did not answer.
inline Status FromGrpc(const grpc::Status& s, std::string_view peer) {
  if (s.ok()) return Status::OK();
  const Code code = static_cast<Code>(s.error_code());
  if (code == Code::kUnavailable || code == Code::kDeadlineExceeded) {
    return Status(code, StrCat(peer, " did not answer: ", s.error_message()));
  }
  return Status(code, s.error_message());
}

}  // namespace tessera
