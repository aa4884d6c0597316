#include "distributed/authenticator.h"

#include <grpcpp/grpcpp.h>

#include "distributed/rpc_util.h"
#include "graph/platform/logging.h"

namespace tessera {

Status Authenticator::Check(const grpc::ServerContextBase& context, std::string_view method) const {
  if (token_.empty()) return Status::OK();
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kClusterTokenHeader);
  if (it != metadata.end() && SameToken(std::string_view(it->second.data(), it->second.size()), token_)) {
    return Status::OK();
  }
  const char* why = it == metadata.end() ? "without the cluster token" : "with a wrong cluster token";
  refusals_.Log(LogSeverity::kWarning, StrCat(task_name_, ": refused ", method, " from ", context.peer(), " ", why));
  return errors::Unauthenticated(task_name_, " refused ", method, ": the request came ", why,
                                 " (TESSERA_CLUSTER_TOKEN)");
}

}  // namespace tessera
