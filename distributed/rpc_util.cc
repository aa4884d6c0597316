#include "distributed/rpc_util.h"

namespace tessera {

Status FromGrpc(const grpc::Status& s, const grpc::ClientContext& context, std::string_view peer) {
  if (s.ok()) return Status::OK();
  const Code code = static_cast<Code>(s.error_code());
  const bool answered = context.GetServerTrailingMetadata().count(kAnsweredHeader) > 0;
  if (!answered && (code == Code::kUnavailable || code == Code::kDeadlineExceeded)) {
    return Status(code, StrCat(peer, " did not answer: ", s.error_message()));
  }
  return Status(code, s.error_message());
}

}  // namespace tessera
