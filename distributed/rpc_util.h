// What the cluster's RPC code shares: the token's metadata key and its comparison, and the
// mapping between our Status and gRPC's (the codes are the same numbers: TensorFlow took
// gRPC's). Internal to distributed/.
#pragma once

#include <grpcpp/support/status.h>

#include <algorithm>
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
