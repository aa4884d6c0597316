#include "distributed/rpc_util.h"

namespace tessera {
namespace {

class AnsweredMarker final : public grpc::experimental::Interceptor {
 public:
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS) &&
        !methods->GetSendStatus().ok()) {
      methods->GetSendTrailingMetadata()->emplace(kAnsweredHeader, "1");
    }
    methods->Proceed();
  }
};

class AnsweredMarkerFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo*) override {
    return new AnsweredMarker();
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewAnsweredMarker() {
  return std::make_unique<AnsweredMarkerFactory>();
}

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
