// WorkerChannels: one gRPC channel per task of a cluster, made on first use and kept, with
// the cluster's token put on every call, and for each task the transport its tensors come
// over (recv_transport.h): the direct connection for a task that serves one
// (direct_transport.h), gRPC otherwise. What the workers, the remote rendezvous and the
// status queries talk to other tasks through. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "distributed/cluster_spec.h"
#include "distributed/direct_transport.h"
#include "distributed/recv_transport.h"
#include "distributed/remote_device.h"
#include "graph/platform/rate_limited_log.h"

namespace grpc {
class Channel;
class ClientContext;
}  // namespace grpc

namespace tessera {

class WorkerChannels {
 public:
  WorkerChannels(ClusterSpec cluster, std::string token);
  // Waits for a connection being made over TCP, which its timeouts bound.
  ~WorkerChannels();
  WorkerChannels(const WorkerChannels&) = delete;
  WorkerChannels& operator=(const WorkerChannels&) = delete;

  // The channel to `job`'s task `task`; InvalidArgument for a task the cluster lacks.
  StatusOr<std::shared_ptr<grpc::Channel>> ForTask(const std::string& job, int task);
  // A fresh context for one call: the token, and a deadline `timeout` from now (none when 0).
  std::unique_ptr<grpc::ClientContext> NewContext(std::chrono::milliseconds timeout) const;
  // The direct connection to that task (direct_transport.h), or null when there is none
  // yet: then gRPC is the way. Over the task's Unix socket when it runs on this machine,
  // connected here at once; else over the TCP port its GetStatus names, connected by a
  // thread of this object's so that no caller waits on the network (receives take gRPC
  // meanwhile). None for a task that serves neither, turns this process away, or when this
  // process speaks TLS. A broken connection is made anew.
  std::shared_ptr<DirectClient> Direct(const std::string& job, int task);
  // How tensors come from that task: its direct connection while it has one, its gRPC
  // stream otherwise. InvalidArgument for a task the cluster lacks.
  StatusOr<std::shared_ptr<RecvTransport>> RecvTransportFor(const std::string& job, int task);
  const ClusterSpec& cluster() const { return cluster_; }

 private:
  // How long asking a task for its direct port, and connecting there, may take; how long
  // until a task whose direct connection could not be made, or that serves none, is tried
  // again.
  static constexpr std::chrono::milliseconds kDirectConnectTimeout{2000};
  static constexpr std::chrono::milliseconds kDirectRetry{1000};
  static constexpr std::chrono::milliseconds kNoDirectRetry{30000};

  struct DirectEntry {
    std::shared_ptr<DirectClient> client;  // null: none; tried again after `retry`
    std::chrono::steady_clock::time_point retry;
    bool connecting = false;  // queued for, or being connected by, the connector
  };
  struct TaskRef {
    std::string address, job;
    int task;
  };

  // The connector thread's: connects the queued tasks over TCP one after another.
  void ConnectQueued();
  // The task's direct connection over TCP; null, with `retry` set, when there is none.
  std::shared_ptr<DirectClient> ConnectTcp(const TaskRef& t, std::chrono::milliseconds* retry);

  const ClusterSpec cluster_;
  const std::string token_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;  // by address; guarded by mu_
  std::map<std::string, std::shared_ptr<RecvTransport>> grpc_recvs_;  // by address; guarded by mu_
  std::map<std::string, DirectEntry> direct_;  // by address; guarded by mu_
  std::deque<TaskRef> to_connect_;              // guarded by mu_
  std::condition_variable connect_cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread connector_;  // started on the first TCP connection wanted
  RateLimitedLog no_direct_;
};

// A channel to `address` ("host:port" or "grpc://host:port") without gRPC's 4 MiB cap on
// what it receives.
std::shared_ptr<grpc::Channel> NewWorkerChannel(std::string_view address);
// A fresh context for one call: `token` (when set) and a deadline `timeout` from now (none
// when 0).
std::unique_ptr<grpc::ClientContext> NewCallContext(const std::string& token, std::chrono::milliseconds timeout);
// What a task's GetStatus says: its name and devices, the TCP port of its direct transport
// (0: none), and the address the call reached (HostOfGrpcPeer; empty when gRPC does not say).
struct TaskStatus {
  std::string task;
  std::vector<RemoteDevice> devices;
  uint16_t direct_port = 0;
  std::string reached;
};

// Asks the task behind `channel` for its status, with `token` and a deadline; `peer` names
// it in errors. Unavailable when nothing answers in time; Unauthenticated when the token is
// refused.
StatusOr<TaskStatus> GetTaskStatus(const std::shared_ptr<grpc::Channel>& channel, const std::string& token,
                                   std::chrono::milliseconds timeout, std::string_view peer);
// The same, of the server at `address` ("host:port" or "grpc://host:port"), over a channel
// of its own; errors name the address.
StatusOr<TaskStatus> GetTaskStatus(std::string_view address, const std::string& token,
                                   std::chrono::milliseconds timeout);

// The address in a gRPC peer string ("ipv4:198.18.0.2:2222", "ipv6:[fe80::1%eth0]:2222",
// percent-encoded or not), without its port or brackets; empty for other kinds of peer.
std::string HostOfGrpcPeer(std::string_view peer);

}  // namespace tessera
