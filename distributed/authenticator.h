// Authenticator: how a cluster task's services admit a request: every request must carry
// the cluster's token (TESSERA_CLUSTER_TOKEN) when the task has one, compared in constant
// time; a refusal is logged and is Unauthenticated naming the task and the method.
// Internal to distributed/. Immutable; thread-safe.
#pragma once

#include <string>
#include <string_view>

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
};

}  // namespace tessera
