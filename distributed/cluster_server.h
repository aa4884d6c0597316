// ClusterServer: one task of a cluster, serving its devices and resources to the other tasks
// over gRPC, as tf.distribute.Server does. It listens on its own task's address only
// (ClusterSpec), and with a token set it refuses every RPC that does not carry the same
// token (Unauthenticated, logged). The in-process part, its devices, resource containers and
// rendezvous, is a runtime Server (runtime/server.h), so sessions in the same process share
// them too.
//
//   auto cluster = ClusterSpec::FromJson(R"({"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]})");
//   auto server = ClusterServer::Create(*cluster, "worker", 0, {});
//   (*server)->target();   // "grpc://127.0.0.1:2223"
//   (*server)->Join();     // until Stop()
//
// Stop and Join may be called from any thread; Stop from a signal-handling thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "distributed/cluster_spec.h"
#include "distributed/server_limits.h"
#include "runtime/server.h"
#include "runtime/session_options.h"

namespace tessera {

struct ClusterServerOptions {
  // The task's devices and pools: device_count, gpu_options, intra_op_parallelism_threads.
  SessionConfig config;
  // When set, every RPC must carry it (TESSERA_CLUSTER_TOKEN); compared in constant time.
  std::string token;
  // Other tasks fetch tensors over the direct transport (direct_transport.h: a Unix socket
  // on this machine, and a TCP port of the task's host unless it is a loopback one) rather
  // than gRPC. Off under TLS, which covers gRPC alone.
  bool direct_transport = true;
  // What peers may hold of this task: connections, receives (server_limits.h).
  ServerLimits limits;
};

class ClusterServer {
 public:
  // InvalidArgument for a job or task the cluster does not have; Unavailable when the task's
  // address cannot be listened on (a port in use, an address not of this machine). A
  // non-loopback address without a token is served with a warning in the log.
  static StatusOr<std::unique_ptr<ClusterServer>> Create(const ClusterSpec& cluster, std::string_view job, int task,
                                                         ClusterServerOptions options);
  ~ClusterServer();  // Stop, then Join
  ClusterServer(const ClusterServer&) = delete;
  ClusterServer& operator=(const ClusterServer&) = delete;

  // "grpc://host:port": what sessions and other tasks name this server by.
  const std::string& target() const { return target_; }
  // "/job:worker/replica:0/task:0"
  const std::string& task_name() const { return task_name_; }
  const std::shared_ptr<Server>& local() const { return local_; }

  // Stops accepting RPCs; those in flight get until `grace` to finish, then are cancelled.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));
  // Blocks until Stop has finished.
  void Join();

 private:
  struct Impl;
  ClusterServer() = default;
  std::string target_;
  std::string task_name_;
  std::shared_ptr<Server> local_;
  std::unique_ptr<Impl> impl_;
};

// The longest cluster token: it rides in every call's metadata, which gRPC caps at 8 KiB.
inline constexpr size_t kMaxClusterTokenBytes = 1024;

// A cluster token is 1 to kMaxClusterTokenBytes printable ASCII characters (what gRPC's
// metadata carries); InvalidArgument saying which rule another breaks, never quoting it.
Status CheckClusterToken(std::string_view token);

}  // namespace tessera
