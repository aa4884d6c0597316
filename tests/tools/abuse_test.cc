// The abuse suite: a `tessera server` process attacked as a hostile peer on its machine or
// network would, on loopback, by this process's user and (as root) by another local user.
// Whatever a peer does, the server keeps serving the others, never aborts, and has its
// descriptors, threads and memory back once the peer is gone. Every attack is bounded in
// connections, bytes and time.
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "distributed/cluster_server.h"
#include "distributed/direct_io.h"
#include "distributed/direct_transport.h"
#include "distributed/grpc_recv_transport.h"
#include "distributed/rpc_util.h"
#include "distributed/worker_channels.h"
#include "tests/distributed/free_port.h"
#include "tests/distributed/process_stats.h"
#include "tests/tools/child_process.h"

#if defined(__SANITIZE_ADDRESS__)
#define TESSERA_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESSERA_UNDER_ASAN 1
#endif
#endif

namespace tessera {
namespace {

using namespace std::chrono_literals;

// Under AddressSanitizer freed memory waits in a quarantine of 256 MiB: a server's size
// there says nothing about what it keeps.
#ifdef TESSERA_UNDER_ASAN
constexpr bool kSizeIsWhatItKeeps = false;
#else
constexpr bool kSizeIsWhatItKeeps = true;
#endif
using testing::Eventually;

constexpr char kToken[] = "abuse-suite-token";
constexpr char kWorker[] = "/job:worker/replica:0/task:0";
constexpr int64_t kMiB = 1 << 20;

// Another local user, for the attacks that need one: a uid that no account has. The kernel
// needs no entry in /etc/passwd to run a process as it, so nothing is made for the test and
// nothing is left behind.
constexpr uid_t kStranger = 46791;

// Root, an unused uid, and a binary that uid can reach: a checkout under a directory only
// its owner may enter (mktemp -d makes one) keeps the tessera binary from every other user.
bool CanBeAnotherUser() {
  if (::geteuid() != 0 || ::getpwuid(kStranger) != nullptr) return false;
  for (std::string path = TESSERA_CLI; !path.empty() && path != "/"; path = path.substr(0, path.rfind('/'))) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
    if (path.rfind('/') == std::string::npos) break;
  }
  return true;
}

// In a forked child: becomes `uid` (and its group) for good, or exits.
void BecomeUser(uid_t uid) {
  if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) _exit(126);
}

enum class Who { kSameUser, kAnotherUser };

// How a test's server is started, besides the defaults.
struct ServerSetup {
  std::optional<uid_t> uid;            // run as this user
  std::optional<rlim_t> process_limit;  // RLIMIT_NPROC
  // glibc's per-thread malloc arenas each grow to their own high-water mark over the first
  // few thousand calls, by tens of MiB here: with one arena, memory that stays is what a
  // leak would keep.
  bool one_malloc_arena = false;
};

// `tessera server` as worker 0 of a one-task cluster, with the token, started with a soft
// descriptor limit of 256 (a tight machine's; the server raises it to the hard limit).
class ServerProcess {
 public:
  explicit ServerProcess(ServerSetup setup = {})
      : port_(testing::FreePort()),
        address_(testing::LoopbackAddress(port_)),
        child_({"server", "--cluster", StrCat(R"({"worker": [")", address_, R"("]})"), "--job", "worker", "--task",
                "0"},
               "", [setup] {
                 ::setenv("TESSERA_CLUSTER_TOKEN", kToken, 1);
                 if (setup.one_malloc_arena) ::setenv("MALLOC_ARENA_MAX", "1", 1);
                 rlimit descriptors{};
                 ::getrlimit(RLIMIT_NOFILE, &descriptors);
                 descriptors.rlim_cur = std::min<rlim_t>(256, descriptors.rlim_max);
                 ::setrlimit(RLIMIT_NOFILE, &descriptors);
                 if (setup.process_limit.has_value()) {
                   const rlimit processes{*setup.process_limit, *setup.process_limit};
                   ::setrlimit(RLIMIT_NPROC, &processes);
                 }
                 if (setup.uid.has_value()) BecomeUser(*setup.uid);
               }) {
    started_ = child_.ReadUntil("Started server", 20s).find("Started server") != std::string::npos;
  }

  bool started() const { return started_; }
  pid_t pid() const { return child_.pid(); }
  int port() const { return port_; }
  const std::string& address() const { return address_; }
  bool alive() { return child_.Wait(50ms) == -1; }
  // A call with the token, answered within `patience`.
  Status Answers(std::chrono::milliseconds patience = 10s) {
    return GetTaskStatus(address_, kToken, patience).status();
  }
  int64_t Threads() const { return testing::ThreadCount(pid()); }
  int64_t Descriptors() const { return testing::DescriptorCount(pid()); }
  int64_t Rss() const { return testing::RssBytes(pid()); }

 private:
  const int port_;
  const std::string address_;
  testing::Child child_;
  bool started_ = false;
};

int ConnectTcp(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t length = sizeof(error);
    if (errno != EINPROGRESS || ::poll(&p, 1, 1000) != 1 ||
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
      ::close(fd);
      return -1;
    }
  }
  return fd;
}

int ConnectDirect(const std::string& address) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  socklen_t length = 0;
  const sockaddr_un a = direct::SocketAddress(address, &length);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&a), length) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

std::string Hello(std::string_view token) {
  std::string hello;
  direct::Put<uint32_t>(&hello, direct::kMagic);
  direct::Put<uint32_t>(&hello, direct::kVersion);
  direct::Put<uint32_t>(&hello, static_cast<uint32_t>(token.size()));
  return hello.append(token);
}

// Whether the server has closed `fd` (or refused on it) within `patience`.
bool ClosedByServer(int fd, std::chrono::milliseconds patience = 10s) {
  return Eventually(
      [fd] {
        char bytes[8];
        const ssize_t n = ::recv(fd, bytes, sizeof(bytes), MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || (n == 4 && bytes[0] != 0);
      },
      patience);
}

// A process, of this user or another, that connects as `connect` says, reports how many
// connections it made, and holds them until told to leave (or this one dies).
class Peer {
 public:
  Peer(Who who, const std::function<int()>& connect) {
    int report[2];
    int control[2];
    if (::pipe(report) != 0 || ::pipe(control) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      // Nothing of the parent's stays open here: not the other peers' pipes (whose ends
      // would never see their parent close), nor its sockets.
      const auto [low, high] = std::minmax(report[1], control[0]);
      ::close_range(3, low - 1, 0);
      ::close_range(low + 1, high - 1, 0);
      ::close_range(high + 1, ~0U, 0);
      rlimit room{4096, 4096};
      (void)::setrlimit(RLIMIT_NOFILE, &room);
      if (who == Who::kAnotherUser) BecomeUser(kStranger);
      const int made = connect();
      (void)!::write(report[1], &made, sizeof(made));
      char byte;
      (void)!::read(control[0], &byte, 1);  // returns when the parent closes its end
      _exit(0);
    }
    ::close(report[1]);
    ::close(control[0]);
    report_ = report[0];
    control_ = control[1];
  }
  ~Peer() { Leave(); }

  // How many connections it made; -1 when it did not say in time.
  int Made() {
    pollfd p{report_, POLLIN, 0};
    int made = -1;
    if (::poll(&p, 1, 60000) != 1 || ::read(report_, &made, sizeof(made)) != sizeof(made)) return -1;
    return made;
  }
  // Closes every connection it made, by ending it.
  void Leave() {
    if (pid_ <= 0) return;
    ::close(control_);
    ::close(report_);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int report_ = -1;
  int control_ = -1;
};

// Sends `bytes` zero bytes (slices of one static megabyte, so that the sender holds no
// gigabyte) as the one message of `method`, with `token` when set.
grpc::Status SendBody(const std::string& address, const std::string& method, size_t bytes, const std::string& token) {
  static const std::vector<char> megabyte(kMiB);
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes; at += megabyte.size()) {
    slices.emplace_back(megabyte.data(), std::min(megabyte.size(), bytes - at), grpc::Slice::STATIC_SLICE);
  }
  grpc::ByteBuffer body(slices.data(), slices.size());
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  grpc::GenericStub stub(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 60s);
  if (!token.empty()) context.AddMetadata(kClusterTokenHeader, token);
  grpc::CompletionQueue queue;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = stub.PrepareCall(&context, method, &queue);
  void* tag = nullptr;
  bool ok = false;
  call->StartCall(nullptr);
  queue.Next(&tag, &ok);
  call->WriteLast(body, grpc::WriteOptions(), nullptr);
  queue.Next(&tag, &ok);
  grpc::Status status;
  call->Finish(&status, nullptr);
  queue.Next(&tag, &ok);
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  return status;
}

class AbuseTest : public ::testing::TestWithParam<Who> {
 protected:
  void SetUp() override {
    if (GetParam() == Who::kAnotherUser && !CanBeAnotherUser()) {
      GTEST_SKIP() << "acting as another local user needs root (CI runs as root) and uid " << kStranger << " free";
    }
  }
};

// Hundreds of connections that say nothing, on both transports and past the descriptor limit
// the server was started with: it answers meanwhile, gives them no threads, and has its
// descriptors back once they are gone. (gRPC 1.51's listener stops for good when accept
// fails with EMFILE; the direct transport used to keep a thread and a descriptor for each.)
TEST_P(AbuseTest, IdleFloodsOnBothTransportsWedgeNothing) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  ASSERT_TRUE(server.Answers().ok());
  const int64_t threads = server.Threads();
  const int64_t descriptors = server.Descriptors();
  {
    Peer flood(GetParam(), [&] {
      int made = 0;
      for (int i = 0; i < 400; ++i) made += ConnectTcp(server.port()) >= 0;
      for (int i = 0; i < 400; ++i) made += ConnectDirect(server.address()) >= 0;
      return made;
    });
    EXPECT_GE(flood.Made(), 400);
    const Status during = server.Answers();
    EXPECT_TRUE(during.ok()) << during;
    EXPECT_LE(server.Threads(), threads + 8);
    flood.Leave();
  }
  EXPECT_TRUE(Eventually([&] { return server.Descriptors() <= descriptors + 2; }, 15s))
      << server.Descriptors() << " descriptors, " << descriptors << " before";
  const Status after = server.Answers();
  EXPECT_TRUE(after.ok()) << after;
  EXPECT_TRUE(server.alive());
}

// Peers of another user, even with the token, are turned away at accept: the kernel says who
// connected before anything is read.
TEST_P(AbuseTest, OnlyThisUsersProcessesWithTheTokenAreAdmittedDirect) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  Peer peer(GetParam(), [&] {
    const int fd = ConnectDirect(server.address());
    const std::string hello = Hello(kToken);
    uint32_t answer = 1;
    pollfd p{fd, POLLIN, 0};
    if (fd < 0 || ::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(hello.size()) ||
        ::poll(&p, 1, 10000) != 1 || ::recv(fd, &answer, sizeof(answer), 0) != sizeof(answer)) {
      return 0;
    }
    return answer == 0 ? 1 : 0;
  });
  EXPECT_EQ(peer.Made(), GetParam() == Who::kSameUser ? 1 : 0);
}

INSTANTIATE_TEST_SUITE_P(Peers, AbuseTest, ::testing::Values(Who::kSameUser, Who::kAnotherUser),
                         [](const ::testing::TestParamInfo<Who>& info) {
                           return info.param == Who::kSameUser ? "SameUser" : "AnotherUser";
                         });

// A connection that says nothing is closed when its hello is due (ServerLimits, 5 s by
// default): gRPC's HTTP/2 handshake and the direct transport's hello alike, and a hello sent a byte
// at a time is due then too.
TEST(SlowPeerTest, SilentAndSlowConnectionsAreClosedWhenTheirHelloIsDue) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  std::vector<int> silent;
  for (int i = 0; i < 10; ++i) {
    silent.push_back(ConnectTcp(server.port()));
    silent.push_back(ConnectDirect(server.address()));
  }
  const int slow = ConnectDirect(server.address());
  ASSERT_GE(slow, 0);
  const std::string hello = Hello(kToken);
  const auto start = std::chrono::steady_clock::now();
  std::thread drip([&] {
    for (char byte : hello) {
      if (::send(slow, &byte, 1, MSG_NOSIGNAL) != 1) return;
      std::this_thread::sleep_for(400ms);
    }
  });
  for (int fd : silent) {
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(ClosedByServer(fd, 15s));
    ::close(fd);
  }
  EXPECT_TRUE(ClosedByServer(slow, 15s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 12s);
  drip.join();
  ::close(slow);
  EXPECT_TRUE(server.Answers().ok());
}

// A gigabyte request without the token is refused from its metadata, before its body is read:
// the server's memory does not grow by it (it grew by 2.6 GB when unary calls were read whole
// before the handler checked the token).
TEST(UnauthenticatedBodyTest, GigabytesWithoutTheTokenAreRefusedBeforeTheyAreRead) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  ASSERT_TRUE(server.Answers().ok());
  const int64_t before = server.Rss();
  std::atomic<bool> done{false};
  int64_t peak = before;
  std::thread sampler([&] {
    while (!done) {
      peak = std::max(peak, server.Rss());
      std::this_thread::sleep_for(5ms);
    }
  });
  std::vector<std::future<grpc::Status>> calls;
  calls.push_back(std::async(std::launch::async, SendBody, server.address(),
                             "/tessera.rpc.WorkerService/RegisterGraph", size_t{1} << 30, ""));
  for (const char* method : {"/tessera.rpc.WorkerService/RunGraph", "/tessera.rpc.MasterService/RunStep",
                             "/tessera.rpc.MasterService/CreateSession"}) {
    calls.push_back(std::async(std::launch::async, SendBody, server.address(), method, size_t{700} * kMiB, ""));
  }
  for (auto& call : calls) {
    const grpc::Status status = call.get();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  }
  done = true;
  sampler.join();
  if (kSizeIsWhatItKeeps) {
    EXPECT_LT(peak - before, 64 * kMiB) << "the server grew from " << before / kMiB << " MiB to " << peak / kMiB;
  }
  EXPECT_TRUE(server.Answers().ok());
}

// Malformed requests, with the token and without: each is refused or ends its connection,
// and the server goes on serving.
TEST(MalformedRequestTest, BadBodiesAndFramesAreRefusedAndTheServerServesOn) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  EXPECT_EQ(SendBody(server.address(), "/tessera.rpc.WorkerService/RegisterGraph", 4096, "").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(SendBody(server.address(), "/tessera.rpc.WorkerService/RegisterGraph", 4096, kToken).error_code(),
            grpc::StatusCode::OK);
  EXPECT_NE(SendBody(server.address(), "/tessera.rpc.WorkerService/RecvTensor", 4096, kToken).error_code(),
            grpc::StatusCode::OK);

  auto sent = [&](const std::string& bytes) {
    const int fd = ConnectDirect(server.address());
    if (fd >= 0) (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    return fd;
  };
  std::string huge_key = Hello(kToken);
  direct::Put<uint64_t>(&huge_key, 1);
  direct::Put<int64_t>(&huge_key, 1);
  direct::Put<uint32_t>(&huge_key, 0xffffffff);
  std::string huge_token;
  direct::Put<uint32_t>(&huge_token, direct::kMagic);
  direct::Put<uint32_t>(&huge_token, direct::kVersion);
  direct::Put<uint32_t>(&huge_token, 0xffffffff);
  for (const std::string& bytes : {huge_key, huge_token, Hello("guess"), std::string(64, '\xff')}) {
    const int fd = sent(bytes);
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(ClosedByServer(fd, 3s));
    ::close(fd);
  }
  EXPECT_TRUE(DirectClient::Connect(server.address(), kWorker, kToken).ok());
  EXPECT_TRUE(server.Answers().ok());
  EXPECT_TRUE(server.alive());
}

// Receives for steps that never run, abandoned by their callers on both transports: after
// four rounds have warmed the server up, six more leave its memory, descriptors and threads
// where they were (every such receive used to keep a rendezvous for good).
TEST(AbandonedReceiveTest, ReceivesForStepsThatNeverRunLeaveNothingBehind) {
  ServerSetup setup;
  setup.one_malloc_arena = true;
  ServerProcess server(setup);
  ASSERT_TRUE(server.started());
  ASSERT_TRUE(server.Answers().ok());
  GrpcRecvTransport grpc_peer(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()), kWorker,
                              kToken);
  StatusOr<std::shared_ptr<DirectClient>> direct_peer = DirectClient::Connect(server.address(), kWorker, kToken);
  ASSERT_TRUE(direct_peer.ok()) << direct_peer.status();
  const std::string key = Rendezvous::CreateKey(StrCat(kWorker, "/device:CPU:0"), 1,
                                                "/job:ps/replica:0/task:0/device:CPU:0", "x:0");
  int64_t next_step = int64_t{1} << 40;
  // Receives `n` at a time that give up after 50 ms. (Thousands of calls at once would
  // leave gRPC's memory at a new high-water mark now and then, and hide what stays.)
  auto abandon = [&](RecvTransport& transport, int n) {
    auto ended = std::make_shared<std::atomic<int>>(0);
    std::vector<std::shared_ptr<RecvTransport::Recv>> receives;
    for (int i = 0; i < n; ++i) {
      receives.push_back(transport.NewRecv(next_step++, key, 50ms, Tensor(),
                                           [ended](const Status&, const Tensor&) { ++*ended; }));
      receives.back()->Start();
    }
    EXPECT_TRUE(Eventually([&] { return *ended == n; }, 60s)) << *ended << " of " << n << " ended";
  };
  auto round = [&] {
    for (int i = 0; i < 6; ++i) abandon(grpc_peer, 500);
    abandon(**direct_peer, 20000);
  };
  for (int i = 0; i < 4; ++i) round();
  const int64_t descriptors = server.Descriptors();
  const int64_t threads = server.Threads();
  // Such a leak added ~23 MiB a round (~130 MiB in six); what gRPC and the allocator keep
  // beside a plateau comes in steps of a few MiB now and then.
  const int64_t warm = server.Rss();
  std::string sizes = StrCat(warm / kMiB);
  for (int i = 0; i < 6; ++i) {
    round();
    sizes += StrCat(" ", server.Rss() / kMiB);
  }
  if (kSizeIsWhatItKeeps) {
    EXPECT_LT(server.Rss() - warm, 24 * kMiB) << "MiB after each round: " << sizes;
  }
  EXPECT_LE(server.Descriptors(), descriptors + 2);
  EXPECT_LE(server.Threads(), threads + 2);
  EXPECT_TRUE(server.Answers().ok());
}

// Under a per-user process limit, a server that cannot start a thread for an admitted peer
// turns that peer away and goes on (it used to abort on std::system_error). The server runs
// as a user of its own, so that the limit counts its threads and its peers' processes only.
TEST(ProcessLimitTest, AServerWithNoThreadsToSpareTurnsPeersAwayAndLives) {
  if (!CanBeAnotherUser()) {
    GTEST_SKIP() << "needs root (CI runs as root) and a binary uid " << kStranger << " can reach, to run the server as it";
  }
  // A process may not lower another's limits without CAP_SYS_RESOURCE: the server is started
  // once to count its threads, then again under a limit that leaves room for 24 more.
  rlim_t threads = 0;
  {
    ServerSetup setup;
    setup.uid = kStranger;
    ServerProcess first(setup);
    ASSERT_TRUE(first.started());
    ASSERT_TRUE(first.Answers().ok());
    threads = static_cast<rlim_t>(first.Threads());
  }
  ServerSetup setup;
  setup.uid = kStranger;
  setup.process_limit = threads + 24;
  ServerProcess server(setup);
  ASSERT_TRUE(server.started());
  ASSERT_TRUE(server.Answers().ok());
  std::vector<std::unique_ptr<Peer>> peers;
  int admitted = 0;
  for (int i = 0; i < 6; ++i) {
    peers.push_back(std::make_unique<Peer>(Who::kAnotherUser, [&] {
      int made = 0;
      const std::string hello = Hello(kToken);
      for (int c = 0; c < 16; ++c) {
        const int fd = ConnectDirect(server.address());
        uint32_t answer = 1;
        pollfd p{fd, POLLIN, 0};
        if (fd >= 0 && ::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(hello.size()) &&
            ::poll(&p, 1, 10000) == 1 && ::recv(fd, &answer, sizeof(answer), 0) == sizeof(answer) && answer == 0) {
          ++made;
        }
      }
      return made;
    }));
    admitted += peers.back()->Made();
  }
  EXPECT_LT(admitted, 6 * 16) << "the limit never bit: the test proves nothing";
  EXPECT_TRUE(server.alive());
  peers.clear();
  const Status after = server.Answers(20s);
  EXPECT_TRUE(after.ok()) << after;
  EXPECT_TRUE(server.alive());
}

// A client process out of threads (the same limit, on the receiving side) is told so, and
// its task takes gRPC to that peer instead; it used to abort.
TEST(ProcessLimitTest, AClientWithNoThreadToSpareIsToldSoInsteadOfAborting) {
  if (!CanBeAnotherUser()) {
    GTEST_SKIP() << "needs root (CI runs as root) and a binary uid " << kStranger << " can reach, to run the client as it";
  }
  ServerSetup setup;
  setup.uid = kStranger;
  ServerProcess server(setup);
  ASSERT_TRUE(server.started());
  const pid_t client = ::fork();
  if (client == 0) {
    BecomeUser(kStranger);
    const rlimit none{1, 1};
    ::setrlimit(RLIMIT_NPROC, &none);
    const StatusOr<std::shared_ptr<DirectClient>> connected = DirectClient::Connect(server.address(), kWorker, kToken);
    const bool told = connected.status().code() == Code::kNotFound &&
                      connected.status().message().find("no thread") != std::string_view::npos;
    _exit(told ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(client, &status, 0), client);
  ASSERT_TRUE(WIFEXITED(status)) << "the client died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "Connect did not say it had no thread";
}

}  // namespace
}  // namespace tessera
