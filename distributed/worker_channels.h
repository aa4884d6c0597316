// WorkerChannels: one gRPC channel per task of a cluster, made on first use and kept, with
// the cluster's token put on every call, and for each task the transport its tensors come
// over (recv_transport.h): the same-host connection for a task on this machine
// (same_host_transport.h), gRPC otherwise. What the workers, the remote rendezvous and the
// status queries talk to other tasks through. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "distributed/cluster_spec.h"
#include "distributed/recv_transport.h"
#include "distributed/same_host_transport.h"

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
  // The same-host connection to that task, or null when it is on another machine, does not
  // serve one, turned this process away, or this process speaks TLS: then gRPC is the way.
  // A broken connection is made anew.
  std::shared_ptr<SameHostClient> SameHost(const std::string& job, int task);
  // How tensors come from that task: its same-host connection while it has one, its gRPC
  // stream otherwise. InvalidArgument for a task the cluster lacks.
  StatusOr<std::shared_ptr<RecvTransport>> RecvTransportFor(const std::string& job, int task);
  const ClusterSpec& cluster() const { return cluster_; }

 private:
  const ClusterSpec cluster_;
  const std::string token_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;  // by address; guarded by mu_
  std::map<std::string, std::shared_ptr<RecvTransport>> grpc_recvs_;  // by address; guarded by mu_
  struct SameHostEntry {
    std::shared_ptr<SameHostClient> client;  // null: none; asked again after `retry`
    std::chrono::steady_clock::time_point retry;
  };
  std::map<std::string, SameHostEntry> same_host_;  // by address; guarded by mu_
};

// A channel to `address` ("host:port" or "grpc://host:port") without gRPC's 4 MiB cap on
// what it receives.
std::shared_ptr<grpc::Channel> NewWorkerChannel(std::string_view address);
// A fresh context for one call: `token` (when set) and a deadline `timeout` from now (none
// when 0).
std::unique_ptr<grpc::ClientContext> NewCallContext(const std::string& token, std::chrono::milliseconds timeout);

}  // namespace tessera
