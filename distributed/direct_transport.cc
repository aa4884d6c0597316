#include "distributed/direct_transport.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

#include "distributed/direct_io.h"
#include "graph/platform/socket_address.h"
#include "graph/serialize/tensor_codec.h"

namespace tessera {
namespace {

using namespace direct;

// How often a client's reader looks for receives past their deadlines.
constexpr std::chrono::milliseconds kDeadlineTick{50};
// As protobuf caps a message, and so gRPC's path a string tensor.
constexpr uint64_t kMaxStringTensorBytes = uint64_t{2} << 30;

bool Discard(int fd, uint64_t n, const std::function<void()>& idle) {
  char scratch[64 << 10];
  while (n > 0) {
    const size_t chunk = std::min<uint64_t>(n, sizeof(scratch));
    if (!ReadAll(fd, scratch, chunk, idle)) return false;
    n -= chunk;
  }
  return true;
}

}  // namespace

std::string DirectSocketName(std::string_view address) {
  if (address.starts_with("grpc://")) address.remove_prefix(sizeof("grpc://") - 1);
  return StrCat(std::string_view("\0", 1), "tessera/", address);
}

StatusOr<DirectRequestHead> ParseDirectRequestHead(std::string_view bytes) {
  if (bytes.size() != kDirectRequestFixedBytes) {
    return errors::InvalidArgument("a direct request head of ", bytes.size(), " bytes");
  }
  DirectRequestHead r;
  r.id = Get<uint64_t>(bytes, 0);
  r.step_id = Get<int64_t>(bytes, 8);
  r.key_bytes = Get<uint32_t>(bytes, 16);
  if (r.key_bytes > kDirectMaxKeyBytes) {
    return errors::InvalidArgument("a direct request with a key of ", r.key_bytes, " bytes");
  }
  return r;
}

StatusOr<DirectAnswerHead> ParseDirectAnswerHead(std::string_view bytes) {
  if (bytes.size() != kDirectAnswerHeadBytes) {
    return errors::InvalidArgument("a direct answer head of ", bytes.size(), " bytes");
  }
  DirectAnswerHead h;
  h.id = Get<uint64_t>(bytes, 0);
  const uint32_t code = Get<uint32_t>(bytes, 8);
  h.message_bytes = Get<uint32_t>(bytes, 12);
  h.header_bytes = Get<uint32_t>(bytes, 16);
  h.element_bytes = Get<uint64_t>(bytes, 20);
  if (code > static_cast<uint32_t>(Code::kUnauthenticated)) {
    return errors::InvalidArgument("a direct answer with status code ", code);
  }
  h.code = static_cast<Code>(code);
  if (h.message_bytes > kDirectMaxMessageBytes || h.header_bytes > kMaxTensorHeaderBytes) {
    return errors::InvalidArgument("a direct answer with a ", h.message_bytes, "-byte message and a ",
                                   h.header_bytes, "-byte tensor header");
  }
  if (h.code != Code::kOk && (h.header_bytes != 0 || h.element_bytes != 0)) {
    return errors::InvalidArgument("a direct answer with both an error and a tensor");
  }
  // OK without a header is a dead value (rendezvous.h), which has no elements either.
  if (h.code == Code::kOk && h.header_bytes == 0 && h.element_bytes != 0) {
    return errors::InvalidArgument("a direct answer with tensor elements but no header");
  }
  return h;
}

class DirectClient::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(int fd, std::string peer, uint64_t max_tensor_bytes, std::chrono::milliseconds heartbeat_timeout)
      : fd_(fd), peer_(std::move(peer)), max_tensor_bytes_(max_tensor_bytes), heartbeat_timeout_(heartbeat_timeout) {}
  ~Impl() { ::close(fd_); }

  void Start() { reader_ = std::thread([self = shared_from_this()] { self->Read(); }); }

  // The reader may be the one letting go of the client, from inside a receive's callback:
  // it then finishes on its own, holding the Impl.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    ::shutdown(fd_, SHUT_RDWR);
    if (reader_.get_id() == std::this_thread::get_id()) reader_.detach();
    else reader_.join();
  }

  uint64_t Recv(int64_t step_id, std::string_view key, std::chrono::milliseconds timeout, Tensor into,
                Rendezvous::DoneCallback done) {
    uint64_t id = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!broken_) {
        id = ++last_id_;
        const auto deadline = timeout.count() > 0 ? Clock::now() + timeout : Clock::time_point::max();
        pending_.emplace(id, Pending{std::move(done), std::move(into), deadline, timeout});
      }
    }
    if (id == 0) {
      done(Lost(), Tensor());
      return 0;
    }
    std::string request;
    Put<uint64_t>(&request, id);
    Put<int64_t>(&request, step_id);
    Put<uint32_t>(&request, static_cast<uint32_t>(key.size()));
    request.append(key);
    bool written;
    {
      std::lock_guard<std::mutex> lock(write_mu_);
      written = WriteAll(fd_, {{request.data(), request.size()}});
    }
    if (!written) Break(Lost());
    return id;
  }

  void Cancel(uint64_t id, const Status& status) {
    if (std::optional<Pending> p = Take(id)) p->done(status, Tensor());
  }

  bool broken() {
    std::lock_guard<std::mutex> lock(mu_);
    return broken_;
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {
    Rendezvous::DoneCallback done;
    Tensor into;  // held, so that a buffer being filled outlives an error
    Clock::time_point deadline;
    std::chrono::milliseconds timeout;
  };

  Status Lost() const { return errors::Unavailable(peer_, " did not answer: the direct connection closed"); }

  std::optional<Pending> Take(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return std::nullopt;
    Pending taken = std::move(it->second);
    pending_.erase(it);
    return taken;
  }

  // Receives past their deadlines fail as gRPC's would; their answers are dropped if they come.
  void Expire() {
    std::vector<Pending> expired;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const Clock::time_point now = Clock::now();
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (it->second.deadline > now) {
          ++it;
          continue;
        }
        expired.push_back(std::move(it->second));
        it = pending_.erase(it);
      }
    }
    for (Pending& p : expired) {
      p.done(errors::DeadlineExceeded(peer_, " did not answer within ", p.timeout.count(), " ms"), Tensor());
    }
  }

  // Every receive still waiting fails; the connection takes no more.
  void Break(const Status& why) {
    std::unordered_map<uint64_t, Pending> pending;
    Status status = why;
    {
      std::lock_guard<std::mutex> lock(mu_);
      broken_ = true;
      if (closing_) status = errors::Cancelled("the receive was given up");
      pending.swap(pending_);
    }
    ::shutdown(fd_, SHUT_RDWR);
    for (auto& [id, p] : pending) p.done(status, Tensor());
  }

  void Read() {
    std::string head;
    std::string message;
    std::string header;
    const std::function<void()> idle = [this] {
      Expire();
      Heartbeat();
    };
    for (;;) {
      if (!ReadString(fd_, kDirectAnswerHeadBytes, &head, idle)) break;
      Heard();
      StatusOr<DirectAnswerHead> h = ParseDirectAnswerHead(head);
      if (!h.ok()) {
        Break(errors::DataLoss(peer_, " sent ", h.status().message()));
        return;
      }
      if (!ReadString(fd_, h->message_bytes, &message, idle) || !ReadString(fd_, h->header_bytes, &header, idle)) break;
      Heard();
      std::optional<Pending> p = Take(h->id);
      if (!p) {  // given up while the answer was on its way
        if (!Discard(fd_, h->element_bytes, idle)) break;
        continue;
      }
      if (h->code != Code::kOk) {
        p->done(Status(h->code, message), Tensor());
        continue;
      }
      if (header.empty()) {  // dead
        p->done(Status::OK(), Tensor());
        continue;
      }
      SetReceiving(true);  // awaited, though no longer pending
      StatusOr<Tensor> value = ReadTensor(header, h->element_bytes, p->into, idle);
      SetReceiving(false);
      if (!value.ok()) {
        // The rest of its elements may still be on the wire: nothing after them can be read,
        // and the receiver learns of it with the connection already marked broken.
        Break(value.status());
        p->done(value.status(), Tensor());
        return;
      }
      p->done(Status::OK(), std::move(*value));
    }
    Break(Lost());
  }

  // The tensor is allocated at the size its header announces (a peer of this user that
  // knows the token is trusted that far; what cannot be allocated is ResourceExhausted) and
  // filled straight from the socket.
  StatusOr<Tensor> ReadTensor(const std::string& header, uint64_t element_bytes, const Tensor& into,
                              const std::function<void()>& idle) {
    StatusOr<TensorHeader> h = DecodeTensorHeader(header);
    if (!h.ok() || h->size != header.size()) {
      return errors::DataLoss(peer_, " sent a tensor header that does not decode",
                              h.ok() ? "" : StrCat(": ", h.status().message()));
    }
    if (element_bytes > max_tensor_bytes_) {
      return errors::ResourceExhausted(peer_, " sent a tensor of ", element_bytes, " bytes, over the ",
                                       max_tensor_bytes_, " this receiver takes");
    }
    if (DataTypeHoldsStrings(h->dtype)) {
      if (element_bytes > kMaxStringTensorBytes) {
        return errors::ResourceExhausted(peer_, " sent a string tensor of ", element_bytes, " bytes, over the ",
                                         kMaxStringTensorBytes, " a message may carry");
      }
      std::string bytes = header;
      bytes.resize(header.size() + element_bytes);
      if (!ReadHeard(bytes.data() + header.size(), element_bytes, idle)) return Lost();
      return DecodeTensor(bytes);
    }
    const uint64_t want = static_cast<uint64_t>(h->shape.num_elements()) * DataTypeSize(h->dtype);
    if (element_bytes != want) {
      return errors::DataLoss(peer_, " sent ", element_bytes, " bytes for a ", DataTypeName(h->dtype), " tensor of shape ",
                              h->shape.DebugString(), ", which takes ", want);
    }
    if (into.IsInitialized() && into.dtype() == h->dtype && into.shape() == h->shape) {
      if (!ReadHeard(into.raw_data(), element_bytes, idle)) return Lost();
      return into;
    }
    ASSIGN_OR_RETURN(Tensor value, Tensor::Allocate(CpuAllocator(), h->dtype, h->shape));
    if (!ReadHeard(value.raw_data(), element_bytes, idle)) return Lost();
    return value;
  }

  // ReadAll in slices, each heard: a large tensor arriving slowly is a live peer.
  bool ReadHeard(void* to, uint64_t n, const std::function<void()>& idle) {
    constexpr uint64_t kSlice = 1 << 20;
    for (char* p = static_cast<char*>(to); n > 0;) {
      const uint64_t slice = std::min(n, kSlice);
      if (!ReadAll(fd_, p, slice, idle)) return false;
      Heard();
      p += slice;
      n -= slice;
    }
    return true;
  }

  void Heard() {
    std::lock_guard<std::mutex> lock(mu_);
    last_heard_ = Clock::now();
    unanswered_since_ = Clock::time_point();
  }

  void SetReceiving(bool receiving) {
    std::lock_guard<std::mutex> lock(mu_);
    receiving_ = receiving;
  }

  // Called when the socket has been silent a tick. Silence with nothing awaited is fine.
  // With receives waiting, silence of a second (or a quarter of the timeout) earns a
  // heartbeat; a peer that answers none of them, nor anything else, for the heartbeat
  // timeout after the first is given up. Time this thread spent in receivers' callbacks is
  // not held against the peer: a heartbeat goes first.
  void Heartbeat() {
    const Clock::time_point now = Clock::now();
    // Several heartbeats fit in the timeout, however short.
    const auto interval = std::min<std::chrono::milliseconds>(kHeartbeatInterval, heartbeat_timeout_ / 4);
    uint64_t id = 0;
    bool give_up = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if ((pending_.empty() && !receiving_) || broken_) {
        unanswered_since_ = Clock::time_point();
        return;
      }
      const bool outstanding = unanswered_since_ != Clock::time_point();
      give_up = outstanding && now - unanswered_since_ >= heartbeat_timeout_;
      if (!give_up && now - last_heard_ >= interval && now - last_heartbeat_ >= interval) {
        last_heartbeat_ = now;
        // Due, whether or not it can be written: a writer stuck on a full socket is silence too.
        if (!outstanding) unanswered_since_ = now;
        id = ++last_id_;  // no receive has it: the answer is dropped, having been heard
      }
    }
    if (give_up) {
      Break(errors::Unavailable(peer_, " sent nothing for ", heartbeat_timeout_.count(),
                                " ms, heartbeats unanswered, while receives waited: it is frozen or gone"));
      return;
    }
    if (id != 0) SendHeartbeat(id);
  }

  // Never waits: a request being written, or a full socket, skips this heartbeat.
  void SendHeartbeat(uint64_t id) {
    std::string request;
    Put<uint64_t>(&request, id);
    Put<int64_t>(&request, 0);
    Put<uint32_t>(&request, 0);
    std::unique_lock<std::mutex> lock(write_mu_, std::try_to_lock);
    if (!lock.owns_lock()) return;
    const ssize_t sent = ::send(fd_, request.data(), request.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    // A frame begun must end, or the stream is undone.
    if (sent > 0 && static_cast<size_t>(sent) < request.size()) {
      (void)WriteAll(fd_, {{request.data() + sent, request.size() - static_cast<size_t>(sent)}});
    }
  }

  static constexpr std::chrono::seconds kHeartbeatInterval{1};

  const int fd_;
  const std::string peer_;
  const uint64_t max_tensor_bytes_;
  const std::chrono::milliseconds heartbeat_timeout_;
  std::thread reader_;
  std::mutex write_mu_;  // one request on the socket at a time
  std::mutex mu_;
  std::unordered_map<uint64_t, Pending> pending_;  // guarded by mu_
  uint64_t last_id_ = 0;                           // guarded by mu_
  bool broken_ = false;                            // guarded by mu_
  bool closing_ = false;                           // guarded by mu_
  bool receiving_ = false;                         // guarded by mu_: a tensor being read
  Clock::time_point last_heard_ = Clock::now();    // guarded by mu_
  Clock::time_point last_heartbeat_;               // guarded by mu_
  Clock::time_point unanswered_since_;             // guarded by mu_; epoch: none outstanding
};

StatusOr<std::shared_ptr<DirectClient>> DirectClient::Greet(int fd, const std::string& peer, const std::string& token,
                                                            uint64_t max_tensor_bytes,
                                                            std::chrono::milliseconds heartbeat_timeout,
                                                            std::chrono::milliseconds hello_timeout) {
  std::string hello;
  Put<uint32_t>(&hello, kMagic);
  Put<uint32_t>(&hello, kVersion);
  Put<uint32_t>(&hello, static_cast<uint32_t>(token.size()));
  hello.append(token);
  SetReceiveTimeout(fd, hello_timeout);
  uint32_t answer = 1;
  if (token.size() > kMaxTokenBytes || !WriteAll(fd, {{hello.data(), hello.size()}}) ||
      !ReadAll(fd, &answer, sizeof(answer)) || answer != 0) {
    ::close(fd);
    return errors::NotFound(peer, " turned away a direct connection");
  }
  SetReceiveTimeout(fd, kDeadlineTick);
  auto impl = std::make_shared<Impl>(fd, peer, max_tensor_bytes, heartbeat_timeout);
  try {
    impl->Start();
  } catch (const std::system_error& e) {
    // Out of threads (a process limit): gRPC, which needs none per peer, is the way.
    return errors::NotFound("no thread for a direct connection to ", peer, ": ", e.what());
  }
  return std::shared_ptr<DirectClient>(new DirectClient(std::move(impl)));
}

StatusOr<std::shared_ptr<DirectClient>> DirectClient::Connect(std::string_view address, std::string peer,
                                                              const std::string& token, uint64_t max_tensor_bytes,
                                                              std::chrono::milliseconds heartbeat_timeout) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errors::NotFound("no Unix socket: ", std::strerror(errno));
  socklen_t length = 0;
  sockaddr_un a = SocketAddress(address, &length);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), length) != 0) {
    const int error = errno;
    ::close(fd);
    return errors::NotFound(peer, " serves no direct peers on this machine: ", std::strerror(error));
  }
  // The token goes only to a process of this user: another could have taken the name.
  ucred server{};
  socklen_t cred_length = sizeof(server);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &server, &cred_length) != 0 || server.uid != ::geteuid()) {
    ::close(fd);
    return errors::NotFound("the direct socket for ", peer, " belongs to another user");
  }
  SetBuffers(fd);
  return Greet(fd, peer, token, max_tensor_bytes, heartbeat_timeout, kHelloTimeout);
}

StatusOr<std::shared_ptr<DirectClient>> DirectClient::ConnectTcp(const std::string& host, uint16_t port,
                                                                 std::string peer, const std::string& token,
                                                                 uint64_t max_tensor_bytes,
                                                                 std::chrono::milliseconds heartbeat_timeout,
                                                                 std::chrono::milliseconds connect_timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string name = Unbracketed(host);
  const std::string service = std::to_string(port);
  if (const int e = ::getaddrinfo(name.c_str(), service.c_str(), &hints, &found); e != 0 || found == nullptr) {
    return errors::NotFound(peer, "'s host ", host, " does not resolve: ", ::gai_strerror(e));
  }
  // Each address the name has, in the resolver's order, until one answers. A host that
  // drops the attempt is given up at the timeout, not after the kernel's minutes of
  // retries (on Linux a send timeout bounds connect too).
  timeval limit{};
  const int64_t ms = std::max<int64_t>(connect_timeout.count(), 1);  // a zero timeval would be none
  limit.tv_sec = ms / 1000;
  limit.tv_usec = (ms % 1000) * 1000;
  int fd = -1;
  int error = 0;
  for (const addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit)) == 0 &&
        ::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      break;
    }
    error = errno == EINPROGRESS ? ETIMEDOUT : errno;
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  if (fd < 0) return errors::NotFound(peer, " serves no direct peers at ", host, ":", port, ": ", std::strerror(error));
  const timeval none{};
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
  SetTcpOptions(fd);
  return Greet(fd, peer, token, max_tensor_bytes, heartbeat_timeout, connect_timeout);
}

DirectClient::DirectClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
DirectClient::~DirectClient() { impl_->Stop(); }

uint64_t DirectClient::Recv(int64_t step_id, std::string_view key, std::chrono::milliseconds timeout, Tensor into,
                              Rendezvous::DoneCallback done) {
  return impl_->Recv(step_id, key, timeout, std::move(into), std::move(done));
}
void DirectClient::Cancel(uint64_t id, const Status& status) { impl_->Cancel(id, status); }
bool DirectClient::broken() const { return impl_->broken(); }

namespace {

// One receive as a RecvTransport's: whichever of Start and Cancel comes second cancels it.
class DirectRecv final : public RecvTransport::Recv {
 public:
  DirectRecv(std::shared_ptr<DirectClient> client, int64_t step_id, std::string key,
               std::chrono::milliseconds timeout, Tensor into, Rendezvous::DoneCallback done)
      : client_(std::move(client)),
        step_id_(step_id),
        key_(std::move(key)),
        timeout_(timeout),
        into_(std::move(into)),
        done_(std::move(done)) {}

  void Start() override {
    const uint64_t id = client_->Recv(step_id_, key_, timeout_, into_, std::move(done_));
    id_.store(id);
    if (cancelled_.load()) client_->Cancel(id, Cancelled());
  }
  void Cancel() override {
    cancelled_.store(true);
    if (const uint64_t id = id_.load(); id != 0) client_->Cancel(id, Cancelled());
  }

 private:
  static Status Cancelled() { return errors::Cancelled("the receive was given up"); }

  const std::shared_ptr<DirectClient> client_;
  const int64_t step_id_;
  const std::string key_;
  const std::chrono::milliseconds timeout_;
  const Tensor into_;
  Rendezvous::DoneCallback done_;
  std::atomic<uint64_t> id_{0};
  std::atomic<bool> cancelled_{false};
};

}  // namespace

std::shared_ptr<RecvTransport::Recv> DirectClient::NewRecv(int64_t step_id, std::string key,
                                                             std::chrono::milliseconds timeout, Tensor into,
                                                             Rendezvous::DoneCallback done) {
  return std::make_shared<DirectRecv>(shared_from_this(), step_id, std::move(key), timeout, std::move(into),
                                        std::move(done));
}

}  // namespace tessera
