#include "distributed/tls.h"

#include <grpcpp/grpcpp.h>

#include <mutex>
#include <optional>

#include "graph/platform/file_io.h"

namespace tessera {
namespace {

struct Pem {
  std::string cert, key, ca;
};

std::mutex mu;
std::optional<Pem> pem;  // guarded by mu

StatusOr<std::string> ReadPem(const std::string& path, const char* what, const char* flag) {
  if (path.empty()) return errors::InvalidArgument("TLS needs ", flag, " (", what, ")");
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, what));
  if (text.find("-----BEGIN ") == std::string::npos) {
    return errors::InvalidArgument(what, " '", path, "' is not PEM (no -----BEGIN line)");
  }
  return text;
}

}  // namespace

Status UseTls(const TlsFiles& files) {
  Pem loaded;
  ASSIGN_OR_RETURN(loaded.cert, ReadPem(files.cert_file, "TLS certificate", "--tls-cert"));
  ASSIGN_OR_RETURN(loaded.key, ReadPem(files.key_file, "TLS key", "--tls-key"));
  ASSIGN_OR_RETURN(loaded.ca, ReadPem(files.ca_file, "TLS CA certificate", "--tls-ca"));
  std::lock_guard<std::mutex> lock(mu);
  pem = std::move(loaded);
  return Status::OK();
}

bool TlsInUse() {
  std::lock_guard<std::mutex> lock(mu);
  return pem.has_value();
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials() {
  std::lock_guard<std::mutex> lock(mu);
  if (!pem) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = pem->ca;
  options.pem_private_key = pem->key;
  options.pem_cert_chain = pem->cert;
  return grpc::SslCredentials(options);
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials() {
  std::lock_guard<std::mutex> lock(mu);
  if (!pem) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = pem->ca;
  options.pem_key_cert_pairs.push_back({pem->key, pem->cert});
  return grpc::SslServerCredentials(options);
}

}  // namespace tessera
