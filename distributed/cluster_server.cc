#include "distributed/cluster_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <sys/resource.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "distributed/authenticator.h"
#include "distributed/graph_mgr.h"
#include "distributed/master_service.h"
#include "distributed/rpc_util.h"
#include "distributed/direct_transport.h"
#include "distributed/tls.h"
#include "distributed/worker_channels.h"
#include "distributed/worker_service.h"
#include "graph/platform/logging.h"
#include "graph/platform/loopback.h"

namespace tessera {
namespace {

// A task holds a descriptor per peer connection, and gRPC 1.51's listener stops for good
// once accept fails with EMFILE (grpc/grpc#20418): the common soft limit of 1,024 is a
// few hundred idle connections from the wedge. The hard limit is the task's to take.
void RaiseDescriptorLimit() {
  static std::once_flag once;
  std::call_once(once, [] {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      Log(LogSeverity::kWarning,
          StrCat("cannot raise the descriptor limit to ", limit.rlim_max, ": ", std::strerror(errno)));
    }
  });
}

}  // namespace

struct ClusterServer::Impl {
  std::unique_ptr<ThreadPool> pool;  // runs the steps masters start here
  std::shared_ptr<GraphMgr> graphs;
  std::unique_ptr<Authenticator> auth;
  std::unique_ptr<grpc::Service> worker;
  std::unique_ptr<grpc::Service> master;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<DirectServer> direct;  // null when off
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;  // guarded by mu: Stop has begun
  bool stopped = false;   // guarded by mu: Shutdown has returned
};

StatusOr<std::unique_ptr<ClusterServer>> ClusterServer::Create(const ClusterSpec& cluster, std::string_view job,
                                                               int task, ClusterServerOptions options) {
  ASSIGN_OR_RETURN(std::string address, cluster.TaskAddress(job, task));
  // A token that cannot ride in a call would start a server no call reaches.
  if (!options.token.empty()) RETURN_IF_ERROR(CheckClusterToken(options.token));
  RaiseDescriptorLimit();
  HoldGrpcCallbackQueue();
  std::unique_ptr<ClusterServer> s(new ClusterServer());
  s->task_name_ = TaskName(job, task);
  ASSIGN_OR_RETURN(s->local_, Server::CreateForTask(options.config, job, task));
  if (options.token.empty() && !IsLoopbackHost(cluster.TaskHost(job, task))) {
    Log(LogSeverity::kWarning, StrCat(s->task_name_, " serves ", address,
                                      " without a cluster token: anyone who can reach it can run graphs on it. "
                                      "Set TESSERA_CLUSTER_TOKEN or --token-file."));
  }
  s->impl_ = std::make_unique<Impl>();
  const int threads = options.config.inter_op_parallelism_threads > 0
                          ? options.config.inter_op_parallelism_threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ASSIGN_OR_RETURN(s->impl_->pool, ThreadPool::Create("inter_op", threads));
  auto channels = std::make_shared<WorkerChannels>(cluster, options.token);
  s->impl_->graphs = std::make_shared<GraphMgr>(s->local_, std::string(job), task, channels, s->impl_->pool.get());
  s->impl_->auth = std::make_unique<Authenticator>(s->task_name_, std::move(options.token));
  if (options.direct_transport && !TlsInUse()) {
    // Over TCP too when peers on other machines may reach it; a loopback host has none.
    const std::string host = cluster.TaskHost(job, task);
    StatusOr<std::unique_ptr<DirectServer>> direct =
        DirectServer::Start(address, s->task_name_, s->local_->rendezvous(), s->impl_->auth->token(), options.limits,
                            IsLoopbackHost(host) ? "" : host);
    // Tasks then use gRPC to fetch from this one.
    if (direct.ok()) s->impl_->direct = std::move(*direct);
    else Log(LogSeverity::kWarning, direct.status().message());
  }
  s->impl_->worker = NewWorkerService(s->task_name_, s->local_, s->impl_->graphs, *s->impl_->auth,
                                       options.limits.max_pending_receives,
                                       s->impl_->direct != nullptr ? s->impl_->direct->tcp_port() : 0);
  s->impl_->master = NewMasterService(
      MasterSession::Environment{std::string(job), task, s->local_, s->impl_->graphs, channels, nullptr}, options.config,
      *s->impl_->auth, options.limits.idle_session_timeout);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, ServerCredentials(), &port);
  builder.RegisterService(s->impl_->worker.get());
  builder.RegisterService(s->impl_->master.get());
  // Two tasks on one address would split its connections between them: the second must fail.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Tensors travel whole: no 4 MiB cap on a message.
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  // Heartbeats both ways: the server pings its callers too, so a step whose master died is
  // cancelled here; and it accepts the callers' pings at the rate they send them.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kHeartbeatIntervalMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kHeartbeatTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, kHeartbeatIntervalMs / 2);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // Bounds on what a peer holds before and after its token is checked (server_limits.h).
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(options.limits.hello_timeout.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.limits.max_calls_per_connection);
  grpc::ResourceQuota quota(StrCat(s->task_name_, " calls"));
  quota.SetMaxThreads(options.limits.max_rpc_threads);
  builder.SetResourceQuota(quota);
  s->impl_->server = builder.BuildAndStart();
  if (s->impl_->server == nullptr || port == 0) {
    return errors::Unavailable(s->task_name_, " cannot listen on ", address,
                               ": the port is in use or the address is not one of this machine's");
  }
  s->target_ = StrCat("grpc://", address);
  return s;
}

ClusterServer::~ClusterServer() {
  if (impl_ == nullptr) return;
  Stop();
  Join();
}

void ClusterServer::Stop(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;  // another caller shuts down; Join waits for it
    impl_->stopping = true;
  }
  if (impl_->server != nullptr) impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->direct.reset();
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stopped = true;
  impl_->cv.notify_all();
}

void ClusterServer::Join() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->cv.wait(lock, [this] { return impl_->stopped; });
}

Status CheckClusterToken(std::string_view token) {
  if (token.empty() || token.size() > kMaxClusterTokenBytes) {
    return errors::InvalidArgument("the cluster token has ", token.size(), " bytes; it must have 1 to ",
                                   kMaxClusterTokenBytes);
  }
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < 0x20 || c > 0x7e) {
      return errors::InvalidArgument("the cluster token's byte ", i, " is not a printable ASCII character");
    }
  }
  return Status::OK();
}

}  // namespace tessera
