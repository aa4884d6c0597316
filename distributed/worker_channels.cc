#include "distributed/worker_channels.h"

#include <grpcpp/grpcpp.h>

#include <cctype>

#include "distributed/grpc_recv_transport.h"
#include "distributed/protos/worker_service.grpc.pb.h"
#include "distributed/rpc_decode.h"
#include "distributed/rpc_util.h"
#include "distributed/tls.h"
#include "graph/platform/loopback.h"

namespace tessera {
std::string HostOfGrpcPeer(std::string_view peer) {
  const bool v6 = peer.starts_with("ipv6:");
  if (!v6 && !peer.starts_with("ipv4:")) return "";
  // Percent-decoded: newer gRPC writes the address as a URI ("ipv6:%5B::1%5D:2222").
  std::string text;
  for (size_t i = 5; i < peer.size(); ++i) {
    if (peer[i] == '%' && i + 2 < peer.size() && std::isxdigit(static_cast<unsigned char>(peer[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(peer[i + 2]))) {
      text += static_cast<char>(std::stoi(std::string(peer.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      text += peer[i];
    }
  }
  if (!v6) {
    const size_t colon = text.rfind(':');
    return colon == std::string::npos ? "" : text.substr(0, colon);
  }
  const size_t close = text.find(']');
  return text.starts_with("[") && close != std::string::npos ? text.substr(1, close - 1) : "";
}

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

StatusOr<TaskStatus> GetTaskStatus(const std::shared_ptr<grpc::Channel>& channel, const std::string& token,
                                   std::chrono::milliseconds timeout, std::string_view peer) {
  auto stub = rpc::WorkerService::NewStub(channel);
  auto context = NewCallContext(token, timeout);
  rpc::GetStatusRequest request;
  rpc::GetStatusResponse response;
  RETURN_IF_ERROR(FromGrpc(SendTheRequest(stub->GetStatus(context.get(), &response), request), *context, peer));
  TaskStatus status;
  status.task = response.task();
  for (const rpc::DeviceAttributes& a : response.devices()) status.devices.push_back(DecodeDevice(a));
  // A port past 16 bits is no port: none.
  status.direct_port = response.direct_port() <= UINT16_MAX ? static_cast<uint16_t>(response.direct_port()) : 0;
  status.reached = HostOfGrpcPeer(context->peer());
  return status;
}

StatusOr<TaskStatus> GetTaskStatus(std::string_view address, const std::string& token,
                                   std::chrono::milliseconds timeout) {
  return GetTaskStatus(NewWorkerChannel(address), token, timeout, StrCat("task at ", address));
}

WorkerChannels::WorkerChannels(ClusterSpec cluster, std::string token)
    : cluster_(std::move(cluster)), token_(std::move(token)) {}

WorkerChannels::~WorkerChannels() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  connect_cv_.notify_all();
  if (connector_.joinable()) connector_.join();
}

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
  std::shared_ptr<DirectClient> broken;  // let go outside mu_: its reader is joined
  {
    std::lock_guard<std::mutex> lock(mu_);
    DirectEntry& entry = direct_[*address];
    if (entry.client != nullptr && !entry.client->broken()) return entry.client;
    broken = std::move(entry.client);
    // A task that serves none would cost every receive a connect that fails: tried again
    // after a while, which also finds a restarted task.
    const auto now = std::chrono::steady_clock::now();
    if (entry.connecting || now < entry.retry) return nullptr;
    entry.retry = now + kDirectRetry;
  }
  broken.reset();
  StatusOr<std::shared_ptr<DirectClient>> local = DirectClient::Connect(*address, TaskName(job, task), token_);
  std::lock_guard<std::mutex> lock(mu_);
  DirectEntry& entry = direct_[*address];
  if (local.ok()) {
    // One made meanwhile is kept, unless it broke; the other is let go after mu_.
    if (entry.client == nullptr || entry.client->broken()) std::swap(entry.client, *local);
    return entry.client;
  }
  // Not on this machine (or not in this network namespace): a task on a loopback host
  // serves no TCP; another's port is asked for and connected to on the connector thread.
  if (IsLoopbackHost(cluster_.TaskHost(job, task)) || entry.connecting || stopping_) return nullptr;
  entry.connecting = true;
  to_connect_.push_back({*address, job, task});
  if (!connector_.joinable()) {
    try {
      connector_ = std::thread([this] { ConnectQueued(); });
    } catch (const std::system_error&) {
      // No thread to be had (a process limit): gRPC, which needs none, is the way. Without
      // a connector the queue held only this task.
      to_connect_.clear();
      entry.connecting = false;
      entry.retry = std::chrono::steady_clock::now() + kNoDirectRetry;
      return nullptr;
    }
  }
  connect_cv_.notify_one();
  return nullptr;
}

void WorkerChannels::ConnectQueued() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    connect_cv_.wait(lock, [this] { return stopping_ || !to_connect_.empty(); });
    if (stopping_) return;
    const TaskRef t = std::move(to_connect_.front());
    to_connect_.pop_front();
    lock.unlock();
    std::chrono::milliseconds retry = kDirectRetry;
    std::shared_ptr<DirectClient> client = ConnectTcp(t, &retry);
    lock.lock();
    DirectEntry& entry = direct_[t.address];
    entry.connecting = false;
    entry.retry = std::chrono::steady_clock::now() + retry;
    if (client != nullptr && (entry.client == nullptr || entry.client->broken())) {
      std::swap(entry.client, client);  // a broken one, if any, is let go below
    }
    lock.unlock();
    client.reset();
    lock.lock();
  }
}

std::shared_ptr<DirectClient> WorkerChannels::ConnectTcp(const TaskRef& t, std::chrono::milliseconds* retry) {
  const std::string peer = TaskName(t.job, t.task);
  StatusOr<std::shared_ptr<grpc::Channel>> channel = ForTask(t.job, t.task);
  if (!channel.ok()) return nullptr;
  StatusOr<TaskStatus> status = GetTaskStatus(*channel, token_, kDirectConnectTimeout, peer);
  if (!status.ok()) return nullptr;
  if (status->direct_port == 0) {
    *retry = kNoDirectRetry;  // it serves none: asking each second would cost a call each
    return nullptr;
  }
  // First the address gRPC reached, where the task's own server answered; then every
  // address of the cluster's name for its host (the task's port may be bound on another
  // of them).
  StatusOr<std::shared_ptr<DirectClient>> connected = errors::NotFound(peer, " has no address");
  for (const std::string& host : {status->reached, cluster_.TaskHost(t.job, t.task)}) {
    if (host.empty()) continue;
    connected = DirectClient::ConnectTcp(host, status->direct_port, peer, token_, UINT64_MAX, kDirectHeartbeatTimeout,
                                         kDirectConnectTimeout);
    if (connected.ok()) return *std::move(connected);
  }
  // Its port is not reachable from here (a firewall that lets gRPC's through, say): the
  // tensors take gRPC, and the port is tried again after a while.
  no_direct_.Log(LogSeverity::kWarning, StrCat("tensors from ", peer, " take gRPC: ", connected.status().message()));
  *retry = kNoDirectRetry;
  return nullptr;
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
