// The direct transport: what RecvTensor does over gRPC, done over a socket and a protocol
// of its own, as MPI and NCCL keep their own paths beside a control plane. Between tasks of
// one machine it is an abstract Unix socket; over loopback gRPC a tensor is copied through
// HTTP/2 frames and TCP, about 1.3 GB/s here, over a Unix socket the kernel copies it once
// each way, straight from the sender's tensor into the receiver's. Between machines it is
// TCP, carrying the same frames: a tensor leaves from its own memory in one sendmsg and is
// read straight into the receiver's, where gRPC would frame it, copy it into its slices and
// hand it over between threads.
//
// A ClusterServer listens, besides its gRPC address, on the abstract Unix socket named after
// that address (DirectSocketName), which exists only on its machine and network namespace
// and vanishes with the process; and, when its host is not a loopback one, on a TCP port of
// that host the kernel picks, which its GetStatus answer names. A receiving task connects to
// the Unix socket first, then asks a task it could not reach so for its port; when neither
// serves (a server with the transport off, or TLS) it uses gRPC.
//
//   auto server = DirectServer::Start("127.0.0.1:2222", "/job:ps/replica:0/task:0",
//                                     local->rendezvous(), token);
//   auto client = DirectClient::Connect("127.0.0.1:2222", "/job:ps/replica:0/task:0", token);
//   uint64_t id = (*client)->Recv(step_id, key, [](const Status& s, const Tensor& t) { ... });
//
// Who may connect: on the Unix socket, a process of the same user (the kernel's SO_PEERCRED
// says so, before anything is read); over TCP, anyone who reaches the port, as with gRPC's;
// either must present the cluster's token within the hello timeout, compared in constant
// time. Others are refused, and logged once a minute. Connections are capped in all and per
// peer (a process, or an address over TCP), and only an admitted one gets threads
// (ServerLimits). A client likewise sends the token only to a server of its own user, or
// over TCP to the port the task's own gRPC server named.
// A connection carries any number of receives at once; answers come in the order their
// tensors are sent. While receives wait (or a tensor is being read), a client that has heard
// nothing for a second sends a heartbeat (an empty key), which a live server answers at
// once: a peer that answers nothing for the heartbeat timeout after one (frozen, or gone
// without a reset) fails the receives with Unavailable, deadline or none. Everything a peer
// writes is checked before it is used (lengths, the tensor header, element counts), as
// gRPC's path does.
//
// Internal to distributed/. Every method is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "distributed/recv_transport.h"
#include "distributed/server_limits.h"
#include "kernels/rendezvous.h"
#include "runtime/rendezvous_mgr.h"

namespace tessera {

// How long a client waiting on receives goes without a byte from its peer, heartbeats
// unanswered, before it gives the peer up.
inline constexpr std::chrono::milliseconds kDirectHeartbeatTimeout{30000};

// "\0tessera/<address>": the abstract socket a task serving `address` listens on.
std::string DirectSocketName(std::string_view address);

// Answers the receives of other tasks from this task's rendezvous.
class DirectServer {
 public:
  // Listens on the Unix socket named after `address`, and over TCP on `tcp_host` (a name or
  // a number; none when empty). Either serves without the other (the name taken, the host
  // not this machine's: logged); Unavailable when neither can be made. `limits` bound the connections, their hellos and the
  // receives they may leave waiting.
  static StatusOr<std::unique_ptr<DirectServer>> Start(std::string_view address, std::string task_name,
                                                       std::shared_ptr<RendezvousMgr> rendezvous, std::string token,
                                                       ServerLimits limits = {}, std::string_view tcp_host = {});
  // Closes every connection; receives still waiting here end when their steps do.
  ~DirectServer();
  DirectServer(const DirectServer&) = delete;
  DirectServer& operator=(const DirectServer&) = delete;

  // The TCP port it listens on; 0 when it has none.
  uint16_t tcp_port() const;

 private:
  class Connection;
  struct Greeting;
  struct State;
  explicit DirectServer(std::shared_ptr<State> state);
  // The acceptor thread's: it alone touches the greetings and connections while it runs.
  void AcceptLoop();
  bool AcceptPending(int listen_fd);  // false when out of descriptors with none to spare
  bool HasRoomFor(const std::string& peer, bool tcp) const;  // under the ServerLimits
  void Greet(size_t i);
  void Admit(const Greeting& g);
  void ExpireGreetings(std::chrono::steady_clock::time_point now);
  void Reap();
  std::shared_ptr<State> state_;
};

// One connection to a task's DirectServer: the RecvTransport WorkerChannels picks for a peer
// that serves one.
class DirectClient final : public RecvTransport, public std::enable_shared_from_this<DirectClient> {
 public:
  // Over the Unix socket. NotFound when no task serves `address` on this machine, or it
  // turned this process away (then gRPC, which says why, is the way); `peer` names the task
  // in errors. A tensor announced larger than `max_tensor_bytes` is ResourceExhausted (and
  // ends the connection).
  static StatusOr<std::shared_ptr<DirectClient>> Connect(
      std::string_view address, std::string peer, const std::string& token, uint64_t max_tensor_bytes = UINT64_MAX,
      std::chrono::milliseconds heartbeat_timeout = kDirectHeartbeatTimeout);
  // Over TCP to `host`:`port`, as Connect otherwise; NotFound also when the connection and
  // the hello's answer take longer than `connect_timeout` each.
  static StatusOr<std::shared_ptr<DirectClient>> ConnectTcp(
      const std::string& host, uint16_t port, std::string peer, const std::string& token,
      uint64_t max_tensor_bytes = UINT64_MAX, std::chrono::milliseconds heartbeat_timeout = kDirectHeartbeatTimeout,
      std::chrono::milliseconds connect_timeout = std::chrono::seconds(10));
  ~DirectClient() override;  // fails the receives still waiting with Cancelled
  DirectClient(const DirectClient&) = delete;
  DirectClient& operator=(const DirectClient&) = delete;

  // Asks for `key` of step `step_id`. `done` is called once: with the tensor, the peer's
  // error, Unavailable naming the peer when the connection breaks, DeadlineExceeded when
  // `timeout` (none when 0) passes first, or Cancel's status. It may be called before Recv
  // returns. A tensor of `into`'s dtype and shape is read into `into` and handed back as
  // it (Rendezvous::Args::into). Returns the receive's id, for Cancel.
  uint64_t Recv(int64_t step_id, std::string_view key, std::chrono::milliseconds timeout, Tensor into,
                Rendezvous::DoneCallback done);
  // Ends the receive `id` now with `status`, if it has not ended; its answer is dropped.
  void Cancel(uint64_t id, const Status& status);
  // Recv and Cancel as a RecvTransport's receive.
  std::shared_ptr<RecvTransport::Recv> NewRecv(int64_t step_id, std::string key, std::chrono::milliseconds timeout,
                                               Tensor into, Rendezvous::DoneCallback done) override;
  // The connection broke: later receives fail at once, and a new Connect is needed.
  bool broken() const;

 private:
  class Impl;
  explicit DirectClient(std::shared_ptr<Impl> impl);
  // The hello on a connected socket, which is the client's from here, then its reader.
  static StatusOr<std::shared_ptr<DirectClient>> Greet(int fd, const std::string& peer, const std::string& token,
                                                       uint64_t max_tensor_bytes,
                                                       std::chrono::milliseconds heartbeat_timeout,
                                                       std::chrono::milliseconds hello_timeout);
  std::shared_ptr<Impl> impl_;  // shared with its reader thread
};

// The frames on the wire, parsed on their own so that they can be fuzzed. All integers are
// little-endian. After the hello (magic, version, token) each request is
//   u64 id | i64 step_id | u32 key length | key
// and each answer
//   u64 id | u32 code | u32 message length | u32 header length | u64 element bytes |
//   message | tensor header (tensor_codec) | elements
// An OK answer with no header carries a dead value (rendezvous.h).
struct DirectRequestHead {
  uint64_t id = 0;
  int64_t step_id = 0;
  uint32_t key_bytes = 0;  // the key follows
};
struct DirectAnswerHead {
  uint64_t id = 0;
  Code code = Code::kOk;
  uint32_t message_bytes = 0;
  uint32_t header_bytes = 0;
  uint64_t element_bytes = 0;
};
inline constexpr size_t kDirectRequestFixedBytes = 20;
inline constexpr size_t kDirectAnswerHeadBytes = 28;
inline constexpr size_t kDirectMaxKeyBytes = 64 << 10;
inline constexpr size_t kDirectMaxMessageBytes = 64 << 10;

// The fixed part of a request; InvalidArgument for a key past the cap.
StatusOr<DirectRequestHead> ParseDirectRequestHead(std::string_view bytes);
// The fixed part of an answer; InvalidArgument for an unknown code or lengths past the caps.
StatusOr<DirectAnswerHead> ParseDirectAnswerHead(std::string_view bytes);

}  // namespace tessera
