// Feeds hostile bytes to what a cluster task decodes from other tasks: the first byte picks
// the message, the rest is its protobuf encoding. A RegisterGraph request that decodes is
// registered on a real task (every kernel constructed on its device) and deregistered; a
// RunGraph request's arguments are decoded; a RecvTensor stream is assembled from messages
// framed by a length byte each (and each cut in two slices), and what assembles must
// survive its own round trip. A first byte of 0xff instead makes the rest what a direct
// task answers a client's two receives (ids 1 and 2) with, over a real Unix socket; 0xfe,
// what a peer sends a direct server (a hello with the token "t0ken", then requests).
// Nothing may crash, leak or hang.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "distributed/cluster_spec.h"
#include "distributed/graph_mgr.h"
#include "distributed/recv_tensor_wire.h"
#include "distributed/rpc_decode.h"
#include "distributed/direct_io.h"
#include "distributed/direct_transport.h"
#include "graph/serialize/tensor_codec.h"

namespace {

tessera::GraphMgr& Graphs() {
  using namespace tessera;
  static auto* server = new std::shared_ptr<Server>(*Server::CreateForTask({}, "worker", 0));
  static auto* pool = ThreadPool::Create("fuzz", 1)->release();
  static auto* graphs = new GraphMgr(
      *server, "worker", 0,
      std::make_shared<WorkerChannels>(*ClusterSpec::FromJson(R"({"worker": ["127.0.0.1:1"]})"), ""), pool);
  return *graphs;
}

constexpr uint8_t kDirectAnswers = 0xff;

// Plays a direct-transport task: admits a client, lets it ask for two tensors and answers with
// `answers` whatever they are, then hangs up. Both receives must end.
void AnswerDirectClient(const char* answers, size_t size) {
  using namespace tessera;
  static const std::string address = StrCat("fuzz-task-", getpid());
  static const int listener = [] {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    const std::string name = DirectSocketName(address);
    std::memcpy(a.sun_path, name.data(), name.size());
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size())) != 0 ||
        ::listen(fd, 1) != 0) {
      std::abort();
    }
    return fd;
  }();
  auto connecting = std::async(std::launch::async, [] {
    return DirectClient::Connect(address, "/job:ps/replica:0/task:0", "", size_t{1} << 20);
  });
  const int fd = ::accept(listener, nullptr, nullptr);
  char hello[12];
  const uint32_t yes = 0;
  if (fd < 0 || ::recv(fd, hello, sizeof(hello), MSG_WAITALL) != sizeof(hello) ||
      ::send(fd, &yes, sizeof(yes), MSG_NOSIGNAL) != sizeof(yes)) {
    std::abort();
  }
  StatusOr<std::shared_ptr<DirectClient>> client = connecting.get();
  if (!client.ok()) std::abort();
  std::promise<void> first, second;
  (*client)->Recv(1, "a", std::chrono::milliseconds(0), Tensor(), [&first](const Status&, const Tensor&) { first.set_value(); });
  (*client)->Recv(1, "b", std::chrono::milliseconds(0), Tensor(), [&second](const Status&, const Tensor&) { second.set_value(); });
  (void)::send(fd, answers, size, MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  first.get_future().wait();
  second.get_future().wait();
  client->reset();
  ::close(fd);
}

constexpr uint8_t kDirectRequests = 0xfe;

// Plays a direct-transport peer: sends `bytes` to a real server, whose step 1 holds one tensor
// under "a", closes its side, and reads until the server hangs up, as it must soon.
void SendToDirectServer(const char* bytes, size_t size) {
  using namespace tessera;
  static const std::string address = StrCat("fuzz-server-", getpid());
  static auto* rendezvous =
      new std::shared_ptr<IntraProcessRendezvousMgr>(std::make_shared<IntraProcessRendezvousMgr>());
  static DirectServer* server = [] {
    ServerLimits limits;
    // Finished connections are reaped once a second; the fuzzer makes many more than that.
    limits.max_direct_connections = limits.max_direct_connections_per_peer = size_t{1} << 20;
    auto started = DirectServer::Start(address, "/job:worker/replica:0/task:0", *rendezvous, "t0ken", limits);
    if (!started.ok()) std::abort();
    return started->release();
  }();
  (void)server;
  if (!(*rendezvous)->Find(1)->Send("a", Tensor::Scalar(1.0f)).ok()) std::abort();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t length = 0;
  const sockaddr_un a = direct::SocketAddress(address, &length);
  const timeval patience{10, 0};
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&a), length) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience)) != 0) {
    std::abort();
  }
  (void)::send(fd, bytes, size, MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  char answer[4096];
  ssize_t got;
  while ((got = ::recv(fd, answer, sizeof(answer), 0)) > 0) {
  }
  if (got < 0 && errno != ECONNRESET) std::abort();  // the server kept a finished peer waiting
  ::close(fd);
  (*rendezvous)->Cleanup(1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  if (size == 0) return 0;
  const char* body = reinterpret_cast<const char*>(data + 1);
  const int body_size = static_cast<int>(size - 1);
  if (data[0] == kDirectAnswers) {
    AnswerDirectClient(body, body_size);
  } else if (data[0] == kDirectRequests) {
    SendToDirectServer(body, body_size);
  } else if (data[0] % 3 == 2) {
    // The assembler allocates what a header announces: bounded here so that a short input
    // cannot ask for more than the fuzzer lets a process allocate.
    RecvTensorAssembler assembler(size_t{1} << 20);
    Status added;
    for (int at = 0; at < body_size && added.ok();) {
      const int length = std::min<int>(static_cast<uint8_t>(body[at]), body_size - at - 1);
      const char* message = body + at + 1;
      grpc::Slice halves[] = {grpc::Slice(message, length / 2), grpc::Slice(message + length / 2, length - length / 2)};
      added = assembler.Add(grpc::ByteBuffer(halves, 2));
      at += 1 + length;
    }
    if (!added.ok()) return 0;
    StatusOr<Tensor> tensor = assembler.Finish();
    if (!tensor.ok()) return 0;
    RecvTensorAssembler again;
    StatusOr<std::vector<grpc::ByteBuffer>> parts = EncodeRecvTensorStream(*tensor, 16);
    if (!parts.ok()) std::abort();
    for (const grpc::ByteBuffer& part : *parts) {
      if (!again.Add(part).ok()) std::abort();
    }
    StatusOr<Tensor> back = again.Finish();
    if (!back.ok() || back->IsInitialized() != tensor->IsInitialized()) std::abort();
    // A dead value (uninitialized) has no bytes to compare.
    if (tensor->IsInitialized() && *EncodeTensor(*back) != *EncodeTensor(*tensor)) std::abort();
  } else if (data[0] % 3 == 0) {
    rpc::RegisterGraphRequest request;
    if (!request.ParseFromArray(body, body_size)) return 0;
    auto partitions = DecodePartitions(request);
    if (!partitions.ok()) return 0;
    StatusOr<std::string> handle = Graphs().Register(std::move(*partitions));
    if (handle.ok() && !Graphs().Deregister(*handle).ok()) std::abort();
  } else {
    rpc::RunGraphRequest request;
    if (!request.ParseFromArray(body, body_size)) return 0;
    (void)DecodeArgs(request);
  }
  return 0;
}
