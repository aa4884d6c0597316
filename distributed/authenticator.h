// Authenticator: how a cluster task's services admit a request: every request must carry
// the cluster's token (TESSERA_CLUSTER_TOKEN) when the task has one, compared in constant
// time; a refusal is Unauthenticated naming the task and the method, and is logged (once a
// minute at most: a peer can cause them at any rate). Internal to distributed/. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "graph/platform/rate_limited_log.h"
#include "graph/platform/status.h"

namespace grpc {
class ServerContextBase;
}  // namespace grpc

namespace tessera {

class Authenticator {
 public:
  Authenticator(std::string task_name, std::string token)
      : task_name_(std::move(task_name)), token_(std::move(token)) {}

  Status Check(const grpc::ServerContextBase& context, std::string_view method) const;
  const std::string& token() const { return token_; }

 private:
  const std::string task_name_;
  const std::string token_;
  mutable RateLimitedLog refusals_;
};

}  // namespace tessera
