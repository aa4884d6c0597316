// WorkerChannels: one gRPC channel per task of a cluster, made on first use and kept, with
// the cluster's token put on every call, and for each task the transport its tensors come
// over (recv_transport.h): the direct connection for a task that serves one
// (direct_transport.h), gRPC otherwise. What the workers, the remote rendezvous and the
// status queries talk to other tasks through. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "distributed/cluster_spec.h"
#include "distributed/recv_transport.h"
#include "distributed/direct_transport.h"

namespace grpc {
class Channel;
class ClientContext;
}  // namespace grpc

namespace tessera {

class WorkerChannels {
 public:
  WorkerChannels(ClusterSpec cluster, std::string token);

  // The channel to `job`'s task `task`; InvalidArgument for a task the cluster lacks.
  StatusOr<std::shared_ptr<grpc::Channel>> ForTask(const std::string& job, int task);
  // A fresh context for one call: the token, and a deadline `timeout` from now (none when 0).
  std::unique_ptr<grpc::ClientContext> NewContext(std::chrono::milliseconds timeout) const;
  // The direct connection to that task (direct_transport.h): over its Unix socket when it
  // runs on this machine, else over the TCP port its GetStatus names. Null when it serves
  // neither, turned this process away, or this process speaks TLS: then gRPC is the way. A
  // broken connection is made anew.
  std::shared_ptr<DirectClient> Direct(const std::string& job, int task);
  // How tensors come from that task: its direct connection while it has one, its gRPC
  // stream otherwise. InvalidArgument for a task the cluster lacks.
  StatusOr<std::shared_ptr<RecvTransport>> RecvTransportFor(const std::string& job, int task);
  const ClusterSpec& cluster() const { return cluster_; }

 private:
  // How long asking a task for its direct port may take; how long until a task that could
  // not be reached, or said it serves no direct peers, is asked again.
  static constexpr std::chrono::milliseconds kDirectPortTimeout{2000};
  static constexpr std::chrono::milliseconds kDirectRetry{1000};
  static constexpr std::chrono::milliseconds kNoDirectRetry{30000};

  // Null when the task serves no direct connection this process may use; `retry` is set
  // when asking again should wait longer than kDirectRetry.
  std::shared_ptr<DirectClient> ConnectDirect(const std::string& address, const std::string& job, int task,
                                              std::chrono::milliseconds* retry);

  const ClusterSpec cluster_;
  const std::string token_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;  // by address; guarded by mu_
  std::map<std::string, std::shared_ptr<RecvTransport>> grpc_recvs_;  // by address; guarded by mu_
  struct DirectEntry {
    std::shared_ptr<DirectClient> client;  // null: none; asked again after `retry`
    std::chrono::steady_clock::time_point retry;
  };
  std::map<std::string, DirectEntry> direct_;  // by address; guarded by mu_
};

// A channel to `address` ("host:port" or "grpc://host:port") without gRPC's 4 MiB cap on
// what it receives.
std::shared_ptr<grpc::Channel> NewWorkerChannel(std::string_view address);
// A fresh context for one call: `token` (when set) and a deadline `timeout` from now (none
// when 0).
std::unique_ptr<grpc::ClientContext> NewCallContext(const std::string& token, std::chrono::milliseconds timeout);

}  // namespace tessera
