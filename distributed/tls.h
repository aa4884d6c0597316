// Tls: mutual TLS for a process's cluster traffic, through gRPC's SSL credentials. One
// certificate and key (PEM) serve both ways: a task presents them to its clients and to the
// tasks it calls; every peer's certificate must be signed by the CA.
//
//   RETURN_IF_ERROR(UseTls({.cert_file = "task.pem", .key_file = "task.key", .ca_file = "ca.pem"}));
//   // from now on every channel this process opens, and every ClusterServer it starts, uses TLS
//
// Process-wide, as a process belongs to one cluster: channels opened before UseTls stay as
// they are. All functions are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "graph/platform/status.h"

namespace grpc {
class ChannelCredentials;
class ServerCredentials;
}  // namespace grpc

namespace tessera {

struct TlsFiles {
  std::string cert_file{};  // this process's certificate chain
  std::string key_file{};   // its private key
  std::string ca_file{};    // the CA that signs every task's (and client's) certificate
};

// Reads the files (InvalidArgument naming a missing one, or an empty or non-PEM file).
Status UseTls(const TlsFiles& files);
bool TlsInUse();

// What channels and servers are made with: TLS after UseTls, plaintext before.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials();
std::shared_ptr<grpc::ServerCredentials> ServerCredentials();

}  // namespace tessera
