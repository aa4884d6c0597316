// The direct transport's server (direct_transport.h). One thread, the acceptor, owns every
// connection until it is admitted: it accepts, checks the peer's user (on the Unix socket),
// reads the hello without blocking and ends those that say nothing in time, so that no peer
// gets a thread or more than a hello's bytes before it proved its user and token. An
// admitted connection gets a reader and a writer thread; the reader closes the socket when
// it ends, and the acceptor joins it within a tick.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "distributed/rpc_util.h"
#include "distributed/direct_io.h"
#include "distributed/direct_transport.h"
#include "graph/platform/rate_limited_log.h"
#include "graph/platform/socket_address.h"
#include "graph/serialize/tensor_codec.h"

namespace tessera {
namespace {

using namespace direct;
using Clock = std::chrono::steady_clock;

// How often the acceptor joins the threads of connections that ended.
constexpr std::chrono::milliseconds kReapTick{1000};
// poll's first entries: the wake eventfd, the Unix socket, the TCP socket; greetings follow.
constexpr size_t kListening = 3;
// How long the acceptor leaves the socket alone when it has no descriptor to accept with.
constexpr std::chrono::milliseconds kOutOfDescriptorsPause{100};

// How many more bytes the hello needs: its fixed part, then the token it announces.
size_t HelloBytesMissing(std::string_view hello) {
  if (hello.size() < kHelloFixedBytes) return kHelloFixedBytes - hello.size();
  const size_t whole = kHelloFixedBytes + std::min<size_t>(Get<uint32_t>(hello, 8), kMaxTokenBytes);
  return whole > hello.size() ? whole - hello.size() : 0;
}

enum class HelloVerdict { kIncomplete, kAdmitted, kRefused };

HelloVerdict JudgeHello(std::string_view hello, std::string_view token) {
  if (hello.size() < kHelloFixedBytes) return HelloVerdict::kIncomplete;
  const uint32_t token_bytes = Get<uint32_t>(hello, 8);
  if (Get<uint32_t>(hello, 0) != kMagic || Get<uint32_t>(hello, 4) != kVersion || token_bytes > kMaxTokenBytes) {
    return HelloVerdict::kRefused;
  }
  if (hello.size() < kHelloFixedBytes + token_bytes) return HelloVerdict::kIncomplete;
  const bool right = token.empty() || SameToken(hello.substr(kHelloFixedBytes), token);
  return right ? HelloVerdict::kAdmitted : HelloVerdict::kRefused;
}

void SetBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

// A listening TCP socket on `host` (a name or a number), on a port the kernel picks.
StatusOr<int> ListenTcp(const std::string& host, const std::string& task_name, uint16_t* port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int e = ::getaddrinfo(Unbracketed(host).c_str(), "0", &hints, &found); e != 0 || found == nullptr) {
    return errors::Unavailable(task_name, " cannot serve direct peers on ", host, ": ", ::gai_strerror(e));
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  const bool listening = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, 128) == 0 &&
                         ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0;
  const int error = errno;
  ::freeaddrinfo(found);
  if (!listening) {
    if (fd >= 0) ::close(fd);
    return errors::Unavailable(task_name, " cannot serve direct peers on ", host, ": ", std::strerror(error));
  }
  *port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

// A listening Unix socket named after `address`.
StatusOr<int> ListenUnix(std::string_view address, const std::string& task_name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  socklen_t length = 0;
  sockaddr_un a = SocketAddress(address, &length);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), length) != 0 || ::listen(fd, 128) != 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    return errors::Unavailable(task_name, " cannot serve direct peers for ", address, ": ", std::strerror(error));
  }
  return fd;
}

// Who a TCP peer is, for the log and the per-peer cap: its address, without the port.
std::string TcpPeer(int fd) {
  sockaddr_storage a{};
  socklen_t length = sizeof(a);
  const std::string text = ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &length) == 0 ? AddressText(a) : "";
  return text.empty() ? "?" : text;
}

}  // namespace

// A connection being admitted: the acceptor reads its hello as the bytes come.
struct DirectServer::Greeting {
  int fd;
  std::string peer;  // "process 1234" on the Unix socket, the peer's address over TCP
  bool tcp;
  std::chrono::steady_clock::time_point deadline;
  std::string hello;  // what has come of it
};

struct DirectServer::State {
  std::string task_name;
  std::string token;
  std::shared_ptr<RendezvousMgr> rendezvous;
  ServerLimits limits;
  int listen_fd = -1;  // the Unix socket
  int tcp_fd = -1;     // the TCP socket; -1 when none
  uint16_t tcp_port = 0;
  int wake_fd = -1;   // an eventfd: the destructor wakes the acceptor with it
  int spare_fd = -1;  // kept in reserve, and given up to turn a peer away when out of descriptors
  std::thread acceptor;
  std::atomic<bool> stopping{false};
  // Shared with the receives' callbacks, which may outlive the server.
  std::shared_ptr<std::atomic<size_t>> pending_receives = std::make_shared<std::atomic<size_t>>(0);
  RateLimitedLog refused;
  RateLimitedLog overloaded;
  // Only the acceptor touches these while it runs; the destructor after joining it.
  std::vector<Greeting> greetings;
  std::vector<std::shared_ptr<Connection>> connections;
};

// One admitted peer: a thread reads its requests and asks the rendezvous, another writes
// the answers as the rendezvous gives them, from the tensors' own memory.
class DirectServer::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(int fd, std::string peer, bool tcp, State* server)
      : fd_(fd), peer_(std::move(peer)), tcp_(tcp), server_(server) {}
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }

  // std::system_error when no thread can be had; the caller turns the peer away.
  void Start() { reader_ = std::thread([this] { Read(); }); }
  // Ends the connection; its reader closes the socket.
  void Shutdown() {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  }
  void Join() {
    if (reader_.joinable()) reader_.join();
  }
  bool finished() {
    std::lock_guard<std::mutex> lock(mu_);
    return read_done_;
  }
  const std::string& peer() const { return peer_; }
  bool tcp() const { return tcp_; }

 private:
  struct Answer {
    uint64_t id;
    Status status;
    Tensor value;
  };

  void Read() {
    std::thread writer;
    try {
      writer = std::thread([this] { Write(); });
      // Admitted only now that both its threads run: a peer told yes is served.
      std::string yes;
      Put<uint32_t>(&yes, 0);
      if (WriteAll(fd_, {{yes.data(), yes.size()}})) ServeRequests();
    } catch (const std::system_error& e) {
      server_->overloaded.Log(LogSeverity::kWarning, StrCat(server_->task_name, " ended a direct connection from ", peer_,
                                                            ": no thread for its answers (", e.what(), ")"));
    }
    Close();
    Shutdown();  // a write in progress returns
    if (writer.joinable()) writer.join();
    std::lock_guard<std::mutex> lock(mu_);
    ::close(fd_);
    fd_ = -1;
    read_done_ = true;
  }

  void ServeRequests() {
    std::string head;
    std::string key;
    const std::shared_ptr<std::atomic<size_t>>& pending = server_->pending_receives;
    while (ReadString(fd_, kDirectRequestFixedBytes, &head)) {
      StatusOr<DirectRequestHead> request = ParseDirectRequestHead(head);
      if (!request.ok() || !ReadString(fd_, request->key_bytes, &key)) return;
      const uint64_t id = request->id;
      if (key.empty()) {  // a heartbeat: this process is alive to answer it
        Queue({id, Status::OK(), Tensor()});
        continue;
      }
      // A receive holds memory here until its tensor comes: peers may not hold too many.
      if (pending->fetch_add(1) >= server_->limits.max_pending_receives) {
        pending->fetch_sub(1);
        server_->overloaded.Log(LogSeverity::kWarning,
                                StrCat(server_->task_name, " refused a direct receive from ", peer_, ": ",
                                       server_->limits.max_pending_receives, " receives already wait here"));
        Queue({id, errors::ResourceExhausted(server_->task_name, " already holds ", server_->limits.max_pending_receives,
                                             " receives waiting for their tensors"), Tensor()});
        continue;
      }
      std::weak_ptr<Connection> self = weak_from_this();
      Rendezvous::DoneCallback done = [self, id, pending](const Status& s, const Tensor& value) {
        pending->fetch_sub(1);
        if (std::shared_ptr<Connection> connection = self.lock()) connection->Queue({id, s, value});
      };
      StatusOr<std::shared_ptr<Rendezvous>> rendezvous = server_->rendezvous->FindForPeer(request->step_id);
      if (!rendezvous.ok()) {
        done(rendezvous.status(), Tensor());
        continue;
      }
      (*rendezvous)->RecvAsync(key, std::move(done));
    }
  }

  void Queue(Answer answer) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    answers_.push_back(std::move(answer));
    cv_.notify_one();
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    answers_.clear();
    cv_.notify_one();
  }

  void Write() {
    for (;;) {
      Answer answer;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return closed_ || !answers_.empty(); });
        if (closed_) return;
        answer = std::move(answers_.front());
        answers_.pop_front();
      }
      if (!WriteAnswer(answer)) {
        Shutdown();
        Close();
        return;
      }
    }
  }

  bool WriteAnswer(const Answer& answer) {
    Status status = answer.status;
    std::string header;
    std::string strings;  // a string tensor's elements, which are not one block of memory
    const char* elements = nullptr;
    size_t element_bytes = 0;
    if (status.ok() && answer.value.IsInitialized()) {
      const bool is_string = DataTypeHoldsStrings(answer.value.dtype());
      StatusOr<std::string> h = EncodeTensorHeader(answer.value);
      if (h.ok() && is_string) {
        StatusOr<std::string> whole = EncodeTensor(answer.value);
        if (whole.ok()) strings = whole->substr(h->size());
        else h = whole.status();
      }
      if (h.ok()) {
        header = *std::move(h);
        elements = is_string ? strings.data() : static_cast<const char*>(answer.value.raw_data());
        element_bytes = is_string ? strings.size() : answer.value.TotalBytes();
      } else {
        status = h.status();
      }
    }
    std::string message = status.ok() ? "" : status.message().substr(0, kDirectMaxMessageBytes);
    std::string head;
    Put<uint64_t>(&head, answer.id);
    Put<uint32_t>(&head, static_cast<uint32_t>(status.code()));
    Put<uint32_t>(&head, static_cast<uint32_t>(message.size()));
    Put<uint32_t>(&head, static_cast<uint32_t>(header.size()));
    Put<uint64_t>(&head, element_bytes);
    std::vector<iovec> parts{{head.data(), head.size()}};
    if (!message.empty()) parts.push_back({message.data(), message.size()});
    if (!header.empty()) parts.push_back({header.data(), header.size()});
    if (element_bytes > 0) parts.push_back({const_cast<char*>(elements), element_bytes});
    return WriteAll(fd_, std::move(parts));
  }

  int fd_;  // guarded by mu_ once the reader runs; -1 once the reader closed it
  const std::string peer_;
  const bool tcp_;
  State* const server_;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Answer> answers_;  // guarded by mu_
  bool closed_ = false;         // guarded by mu_: nothing more is written
  bool read_done_ = false;      // guarded by mu_: the reader has ended and closed the socket
};

StatusOr<std::unique_ptr<DirectServer>> DirectServer::Start(std::string_view address, std::string task_name,
                                                                 std::shared_ptr<RendezvousMgr> rendezvous,
                                                                 std::string token, ServerLimits limits,
                                                                 std::string_view tcp_host) {
  auto state = std::make_shared<State>();
  state->task_name = std::move(task_name);
  state->token = std::move(token);
  state->rendezvous = std::move(rendezvous);
  state->limits = limits;
  state->wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (state->wake_fd < 0) return errors::Unavailable(state->task_name, ": no eventfd: ", std::strerror(errno));
  // Either socket serves without the other: peers whose way is not there use gRPC.
  const StatusOr<int> unix_socket = ListenUnix(address, state->task_name);
  if (unix_socket.ok()) state->listen_fd = *unix_socket;
  if (!tcp_host.empty()) {
    StatusOr<int> tcp = ListenTcp(std::string(tcp_host), state->task_name, &state->tcp_port);
    if (tcp.ok()) state->tcp_fd = *tcp;
    else Log(LogSeverity::kWarning, tcp.status().message());
  }
  if (!unix_socket.ok()) {
    if (state->tcp_fd < 0) {
      ::close(state->wake_fd);
      return unix_socket.status();
    }
    Log(LogSeverity::kWarning, unix_socket.status().message());
  }
  state->spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::unique_ptr<DirectServer> server(new DirectServer(std::move(state)));
  server->state_->acceptor = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

DirectServer::DirectServer(std::shared_ptr<State> state) : state_(std::move(state)) {}

uint16_t DirectServer::tcp_port() const { return state_->tcp_port; }

DirectServer::~DirectServer() {
  state_->stopping = true;
  const uint64_t one = 1;
  (void)!::write(state_->wake_fd, &one, sizeof(one));
  state_->acceptor.join();
  if (state_->listen_fd >= 0) ::close(state_->listen_fd);
  if (state_->tcp_fd >= 0) ::close(state_->tcp_fd);
  ::close(state_->wake_fd);
  if (state_->spare_fd >= 0) ::close(state_->spare_fd);
  for (const Greeting& g : state_->greetings) ::close(g.fd);
  for (const auto& c : state_->connections) c->Shutdown();
  for (const auto& c : state_->connections) c->Join();
}

void DirectServer::AcceptLoop() {
  State& s = *state_;
  Clock::time_point accept_paused_until{};
  std::vector<pollfd> polled;
  while (!s.stopping) {
    Reap();
    const Clock::time_point now = Clock::now();
    ExpireGreetings(now);
    Clock::time_point wake_at = now + kReapTick;
    for (const Greeting& g : s.greetings) wake_at = std::min(wake_at, g.deadline);
    const bool accepting = now >= accept_paused_until;
    if (!accepting) wake_at = std::min(wake_at, accept_paused_until);
    polled.clear();
    polled.push_back({s.wake_fd, POLLIN, 0});
    polled.push_back({accepting ? s.listen_fd : -1, POLLIN, 0});
    polled.push_back({accepting ? s.tcp_fd : -1, POLLIN, 0});
    for (const Greeting& g : s.greetings) polled.push_back({g.fd, POLLIN, 0});
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - now);
    if (::poll(polled.data(), polled.size(), static_cast<int>(std::max<int64_t>(wait.count(), 0) + 1)) < 0) continue;
    if (s.stopping) return;
    // Greetings first: the accepts below add to them, and the poll said nothing of those.
    for (size_t i = polled.size(); i-- > kListening;) {
      if (polled[i].revents != 0) Greet(i - kListening);
    }
    for (size_t i = 1; i < kListening; ++i) {
      if ((polled[i].revents & POLLIN) != 0 && !AcceptPending(polled[i].fd)) {
        accept_paused_until = Clock::now() + kOutOfDescriptorsPause;
      }
    }
  }
}

bool DirectServer::AcceptPending(int listen_fd) {
  State& s = *state_;
  // A burst at a time, so that greetings and reaping are not starved by a flood.
  for (int burst = 0; burst < 64; ++burst) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      // Out of descriptors or memory: the peer at the head of the queue is turned away with
      // the spare descriptor, so that it does not sit there keeping the socket readable.
      s.refused.Log(LogSeverity::kWarning, StrCat(s.task_name, " turned a direct peer away: ", std::strerror(errno)));
      if (s.spare_fd < 0) return false;
      ::close(s.spare_fd);
      const int shed = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (shed >= 0) ::close(shed);
      s.spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      return shed >= 0;
    }
    std::string peer;
    const bool tcp = listen_fd == s.tcp_fd;
    if (tcp) {
      // Over TCP the token alone says who may ask: the peer's user is not known here.
      peer = TcpPeer(fd);
      SetTcpOptions(fd);
    } else {
      ucred cred{};
      socklen_t length = sizeof(cred);
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0 || cred.uid != ::geteuid()) {
        ::close(fd);
        s.refused.Log(LogSeverity::kWarning,
                      StrCat(s.task_name, " refused a direct connection from process ", cred.pid, " of another user"));
        continue;
      }
      peer = StrCat("process ", cred.pid);
    }
    if (!HasRoomFor(peer, tcp)) {
      ::close(fd);
      s.refused.Log(LogSeverity::kWarning, StrCat(s.task_name, " refused a direct connection from ", peer,
                                                  ": admitted peers ", s.connections.size(), ", greetings ",
                                                  s.greetings.size(), " (ServerLimits)"));
      continue;
    }
    s.greetings.push_back({fd, std::move(peer), tcp, Clock::now() + s.limits.hello_timeout, {}});
  }
  return true;
}

// Each kind of peer has slots of its own: anyone on the network can open TCP connections,
// which must not crowd out this machine's tasks. Over TCP, connections not yet admitted
// have a cap of their own, in all and from one address (an eighth of it), so that one
// host's silence does not shut out the others.
bool DirectServer::HasRoomFor(const std::string& peer, bool tcp) const {
  const State& s = *state_;
  const ServerLimits& limits = s.limits;
  size_t greetings_from_peer = 0, admitted_from_peer = 0, greetings_of_kind = 0, admitted_of_kind = 0;
  for (const Greeting& g : s.greetings) {
    greetings_from_peer += g.peer == peer;
    greetings_of_kind += g.tcp == tcp;
  }
  for (const auto& c : s.connections) {
    admitted_from_peer += c->peer() == peer;
    admitted_of_kind += c->tcp() == tcp;
  }
  const size_t from_peer = greetings_from_peer + admitted_from_peer;
  if (!tcp) {
    return greetings_of_kind + admitted_of_kind < limits.max_direct_connections &&
           from_peer < limits.max_direct_connections_per_peer;
  }
  return greetings_of_kind < limits.max_direct_tcp_greetings &&
         greetings_from_peer < std::max<size_t>(1, limits.max_direct_tcp_greetings / 8) &&
         admitted_of_kind < limits.max_direct_connections && from_peer < limits.max_direct_connections_per_address;
}

// Reads what has come of greeting `i`'s hello; once whole, admits or refuses its peer.
void DirectServer::Greet(size_t i) {
  State& s = *state_;
  Greeting& g = s.greetings[i];
  char buffer[256];
  const ssize_t got = ::recv(g.fd, buffer, std::min(sizeof(buffer), HelloBytesMissing(g.hello)), MSG_DONTWAIT);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  HelloVerdict verdict = HelloVerdict::kRefused;
  if (got > 0) {
    g.hello.append(buffer, static_cast<size_t>(got));
    verdict = JudgeHello(g.hello, s.token);
    if (verdict == HelloVerdict::kIncomplete) return;
  }
  const Greeting greeting = std::move(g);
  s.greetings.erase(s.greetings.begin() + static_cast<std::ptrdiff_t>(i));
  if (verdict == HelloVerdict::kAdmitted) {
    Admit(greeting);
    return;
  }
  if (got > 0) {  // a peer that left has nobody to tell
    s.refused.Log(LogSeverity::kWarning, StrCat(s.task_name, " refused a direct connection from ", greeting.peer,
                                                " that did not present the cluster token"));
    std::string no;
    Put<uint32_t>(&no, 1);
    (void)::send(greeting.fd, no.data(), no.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  ::close(greeting.fd);
}

void DirectServer::Admit(const Greeting& g) {
  State& s = *state_;
  SetBlocking(g.fd);
  if (!g.tcp) SetBuffers(g.fd);
  auto connection = std::make_shared<Connection>(g.fd, g.peer, g.tcp, &s);
  try {
    connection->Start();
  } catch (const std::system_error& e) {
    // The connection's destructor closes the socket: the peer sees it end.
    s.overloaded.Log(LogSeverity::kWarning, StrCat(s.task_name, " ended a direct connection from ", g.peer,
                                                   ": no thread for it (", e.what(), ")"));
    return;
  }
  s.connections.push_back(std::move(connection));
}

void DirectServer::ExpireGreetings(std::chrono::steady_clock::time_point now) {
  State& s = *state_;
  auto late = std::stable_partition(s.greetings.begin(), s.greetings.end(),
                                    [now](const Greeting& g) { return g.deadline > now; });
  for (auto it = late; it != s.greetings.end(); ++it) {
    s.refused.Log(LogSeverity::kWarning, StrCat(s.task_name, " closed a direct connection from ", it->peer,
                                                " that did not say who it is within ", s.limits.hello_timeout.count(),
                                                " ms"));
    ::close(it->fd);
  }
  s.greetings.erase(late, s.greetings.end());
}

void DirectServer::Reap() {
  State& s = *state_;
  auto gone = std::stable_partition(s.connections.begin(), s.connections.end(),
                                    [](const std::shared_ptr<Connection>& c) { return !c->finished(); });
  for (auto it = gone; it != s.connections.end(); ++it) (*it)->Join();
  s.connections.erase(gone, s.connections.end());
}

}  // namespace tessera
