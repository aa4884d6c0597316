#include "distributed/worker_channels.h"

#include <grpcpp/grpcpp.h>

#include "distributed/grpc_recv_transport.h"
#include "distributed/protos/worker_service.grpc.pb.h"
#include "distributed/rpc_util.h"
#include "distributed/tls.h"
#include "graph/platform/loopback.h"

namespace tessera {

std::shared_ptr<grpc::Channel> NewWorkerChannel(std::string_view address) {
  HoldGrpcCallbackQueue();
  if (address.starts_with("grpc://")) address.remove_prefix(sizeof("grpc://") - 1);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // A task that restarts is found again within a second, not gRPC's default of up to two
  // minutes of reconnect backoff. The minimum is left alone: gRPC also takes it as the time
  // a connection attempt may take, which a loaded machine needs.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Heartbeats: a peer that stops answering pings (a machine gone, a process frozen) fails
  // the calls waiting on it as Unavailable, even those without a deadline.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kHeartbeatIntervalMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kHeartbeatTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  return grpc::CreateCustomChannel(std::string(address), ChannelCredentials(), args);
}

std::unique_ptr<grpc::ClientContext> NewCallContext(const std::string& token, std::chrono::milliseconds timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!token.empty()) context->AddMetadata(kClusterTokenHeader, token);
  if (timeout.count() > 0) context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

WorkerChannels::WorkerChannels(ClusterSpec cluster, std::string token)
    : cluster_(std::move(cluster)), token_(std::move(token)) {}

StatusOr<std::shared_ptr<grpc::Channel>> WorkerChannels::ForTask(const std::string& job, int task) {
  ASSIGN_OR_RETURN(std::string address, cluster_.TaskAddress(job, task));
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<grpc::Channel>& channel = channels_[address];
  if (channel == nullptr) channel = NewWorkerChannel(address);
  return channel;
}

std::shared_ptr<DirectClient> WorkerChannels::Direct(const std::string& job, int task) {
  // Under TLS every byte between tasks goes through it.
  if (TlsInUse()) return nullptr;
  StatusOr<std::string> address = cluster_.TaskAddress(job, task);
  if (!address.ok()) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    DirectEntry& entry = direct_[*address];
    const auto now = std::chrono::steady_clock::now();
    if (entry.client != nullptr && !entry.client->broken()) return entry.client;
    entry.client = nullptr;
    // A task that serves none would cost every receive a connect that fails: asked again
    // after a while (receives meanwhile take gRPC), which also finds a restarted task.
    if (now < entry.retry) return nullptr;
    entry.retry = now + kDirectRetry;
  }
  // Outside mu_: over TCP this asks the task for its port first.
  std::chrono::milliseconds retry = kDirectRetry;
  std::shared_ptr<DirectClient> client = ConnectDirect(*address, job, task, &retry);
  std::lock_guard<std::mutex> lock(mu_);
  DirectEntry& entry = direct_[*address];
  entry.client = client;
  entry.retry = std::chrono::steady_clock::now() + retry;
  return client;
}

std::shared_ptr<DirectClient> WorkerChannels::ConnectDirect(const std::string& address, const std::string& job,
                                                            int task, std::chrono::milliseconds* retry) {
  const std::string peer = TaskName(job, task);
  StatusOr<std::shared_ptr<DirectClient>> connected = DirectClient::Connect(address, peer, token_);
  if (connected.ok()) return *std::move(connected);
  // Not on this machine (or not in this network namespace): its TCP port, if it has one. A
  // task on a loopback host serves none.
  const std::string host = cluster_.TaskHost(job, task);
  if (IsLoopbackHost(host)) return nullptr;
  StatusOr<std::shared_ptr<grpc::Channel>> channel = ForTask(job, task);
  if (!channel.ok()) return nullptr;
  auto stub = rpc::WorkerService::NewStub(*channel);
  auto context = NewContext(kDirectPortTimeout);
  rpc::GetStatusRequest request;
  rpc::GetStatusResponse response;
  if (!SendTheRequest(stub->GetStatus(context.get(), &response), request).ok()) return nullptr;
  if (response.direct_port() == 0 || response.direct_port() > UINT16_MAX) {
    *retry = kNoDirectRetry;  // it serves none: asking each second would cost a call each
    return nullptr;
  }
  connected = DirectClient::ConnectTcp(host, static_cast<uint16_t>(response.direct_port()), peer, token_);
  return connected.ok() ? *std::move(connected) : nullptr;
}

StatusOr<std::shared_ptr<RecvTransport>> WorkerChannels::RecvTransportFor(const std::string& job, int task) {
  if (std::shared_ptr<DirectClient> client = Direct(job, task); client != nullptr) {
    return std::shared_ptr<RecvTransport>(std::move(client));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, ForTask(job, task));
  ASSIGN_OR_RETURN(std::string address, cluster_.TaskAddress(job, task));
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<RecvTransport>& transport = grpc_recvs_[address];
  if (transport == nullptr) transport = std::make_shared<GrpcRecvTransport>(std::move(channel), TaskName(job, task), token_);
  return transport;
}

std::unique_ptr<grpc::ClientContext> WorkerChannels::NewContext(std::chrono::milliseconds timeout) const {
  return NewCallContext(token_, timeout);
}

}  // namespace tessera
