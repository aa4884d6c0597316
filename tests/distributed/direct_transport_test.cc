// The direct transport on its own: a server answering from a rendezvous manager and clients
// fetching from it over its Unix socket and over TCP, hostile peers on either end, and the
// frames' parsers.
#include "distributed/direct_transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "distributed/cluster_server.h"
#include "distributed/worker_channels.h"
#include "graph/serialize/tensor_codec.h"
#include "tests/distributed/free_port.h"
#include "tests/distributed/process_stats.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

constexpr char kPeer[] = "/job:ps/replica:0/task:0";
constexpr std::chrono::milliseconds kNoTimeout{0};

std::string Bytes(std::initializer_list<uint64_t> words, std::initializer_list<int> sizes) {
  std::string out;
  auto size = sizes.begin();
  for (uint64_t w : words) out.append(reinterpret_cast<const char*>(&w), *size++);
  return out;
}

// A raw Unix-socket connection or listener on `address`'s abstract name.
int RawSocket(const std::string& address, bool listen_there) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = DirectSocketName(address);
  std::memcpy(a.sun_path, name.data(), name.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  const int rc = listen_there ? (::bind(fd, reinterpret_cast<sockaddr*>(&a), length) == 0 ? ::listen(fd, 4) : -1)
                              : ::connect(fd, reinterpret_cast<sockaddr*>(&a), length);
  if (rc != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A raw TCP connection to 127.0.0.1:`port`.
int RawTcpSocket(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A fake peer's side: accepts one client on `listener` and admits it, as a server does once
// the hello (of token "token") is read; -1 when the client left first.
int AdmitOne(int listener) {
  const int fd = ::accept(listener, nullptr, nullptr);
  char hello[12 + 5];
  if (::recv(fd, hello, sizeof(hello), MSG_WAITALL) != static_cast<ssize_t>(sizeof(hello))) {
    ::close(fd);
    return -1;
  }
  const uint32_t yes = 0;
  (void)::write(fd, &yes, sizeof(yes));
  return fd;
}

std::pair<Status, Tensor> Wait(std::future<std::pair<Status, Tensor>> f) {
  if (f.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    return {errors::DeadlineExceeded("test gave up"), Tensor()};
  }
  return f.get();
}

// Every case over the Unix socket (false) and over TCP (true), to one server serving both.
class DirectTransportTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    address_ = testing::LoopbackAddress(testing::FreePort());
    auto server = DirectServer::Start(address_, kPeer, rendezvous_, "s3cret", {}, "127.0.0.1");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    tcp_port_ = server_->tcp_port();
    ASSERT_NE(tcp_port_, 0);
  }

  StatusOr<std::shared_ptr<DirectClient>> Connect(const std::string& token, uint64_t max_tensor_bytes = UINT64_MAX,
                                                  std::chrono::milliseconds heartbeat_timeout = kDirectHeartbeatTimeout) {
    return GetParam() ? DirectClient::ConnectTcp("127.0.0.1", tcp_port_, kPeer, token, max_tensor_bytes, heartbeat_timeout)
                      : DirectClient::Connect(address_, kPeer, token, max_tensor_bytes, heartbeat_timeout);
  }
  std::shared_ptr<DirectClient> Client() {
    auto client = Connect("s3cret");
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *client : nullptr;
  }
  // A connection that has said nothing yet.
  int RawClient() { return GetParam() ? RawTcpSocket(tcp_port_) : RawSocket(address_, false); }
  std::future<std::pair<Status, Tensor>> Recv(DirectClient& client, int64_t step, const std::string& key,
                                              std::chrono::milliseconds timeout = kNoTimeout) {
    auto got = std::make_shared<std::promise<std::pair<Status, Tensor>>>();
    client.Recv(step, key, timeout, Tensor(), [got](const Status& s, const Tensor& t) { got->set_value({s, t}); });
    return got->get_future();
  }

  std::string address_;
  uint16_t tcp_port_ = 0;
  std::shared_ptr<RendezvousMgr> rendezvous_ = std::make_shared<IntraProcessRendezvousMgr>();
  std::unique_ptr<DirectServer> server_;
};

TEST_P(DirectTransportTest, ManyReceivesOnOneConnectionEachGetTheirOwnTensor) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  const int64_t step = 7;
  std::vector<std::future<std::pair<Status, Tensor>>> got;
  for (int i = 0; i < 16; ++i) got.push_back(Recv(*client, step, StrCat("t", i)));
  // Sent in reverse: the answers come in the order of the sends, not of the requests.
  for (int i = 15; i >= 0; --i) {
    Tensor t(DataType::kInt32, TensorShape({i + 1}));
    for (int j = 0; j <= i; ++j) t.data<int32_t>()[j] = i;
    ASSERT_TRUE(rendezvous_->Find(step)->Send(StrCat("t", i), t).ok());
  }
  for (int i = 0; i < 16; ++i) {
    auto [status, value] = Wait(std::move(got[i]));
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_EQ(value.NumElements(), i + 1);
    EXPECT_EQ(value.data<int32_t>()[i], i);
  }
  EXPECT_FALSE(client->broken());
}

TEST_P(DirectTransportTest, ATensorThatFitsTheReceiversBufferIsReadIntoIt) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  Tensor value(DataType::kFloat, TensorShape({4}));
  for (int i = 0; i < 4; ++i) value.data<float>()[i] = 0.5f * i;
  ASSERT_TRUE(rendezvous_->Find(6)->Send("fits", value).ok());
  ASSERT_TRUE(rendezvous_->Find(6)->Send("other shape", value).ok());

  Tensor into(DataType::kFloat, TensorShape({4}));
  auto fits = std::make_shared<std::promise<std::pair<Status, Tensor>>>();
  client->Recv(6, "fits", kNoTimeout, into, [fits](const Status& s, const Tensor& t) { fits->set_value({s, t}); });
  auto [status, got] = Wait(fits->get_future());
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(got.raw_data(), into.raw_data());
  EXPECT_EQ(into.data<float>()[3], 1.5f);

  Tensor elsewhere(DataType::kFloat, TensorShape({2, 2}));
  auto other = std::make_shared<std::promise<std::pair<Status, Tensor>>>();
  client->Recv(6, "other shape", kNoTimeout, elsewhere,
               [other](const Status& s, const Tensor& t) { other->set_value({s, t}); });
  auto [other_status, other_got] = Wait(other->get_future());
  ASSERT_TRUE(other_status.ok()) << other_status;
  EXPECT_NE(other_got.raw_data(), elsewhere.raw_data());
  EXPECT_EQ(other_got.shape(), TensorShape({4}));
  EXPECT_EQ(other_got.data<float>()[2], 1.0f);
}

TEST_P(DirectTransportTest, ATensorOverTheClientsLimitIsResourceExhausted) {
  auto client = Connect("s3cret", /*max_tensor_bytes=*/16);
  ASSERT_TRUE(client.ok()) << client.status();
  auto got = Recv(**client, 8, "big");
  ASSERT_TRUE(rendezvous_->Find(8)->Send("big", Tensor(DataType::kFloat, TensorShape({16}))).ok());
  auto [status, value] = Wait(std::move(got));
  EXPECT_EQ(status.code(), Code::kResourceExhausted) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("64 bytes, over the 16 this receiver takes"));
  EXPECT_TRUE((*client)->broken());
}

TEST_P(DirectTransportTest, TheSendersErrorComesBackWithItsCode) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  auto got = Recv(*client, 3, "x");
  rendezvous_->Find(3)->StartAbort(errors::ResourceExhausted("node w: out of memory on the ps"));
  auto [status, value] = Wait(std::move(got));
  EXPECT_EQ(status.code(), Code::kResourceExhausted) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("node w: out of memory on the ps"));
}

TEST_P(DirectTransportTest, CancellingOrDroppingTheClientEndsItsReceives) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  auto cancelled = std::make_shared<std::promise<std::pair<Status, Tensor>>>();
  const uint64_t id =
      client->Recv(1, "a", kNoTimeout, Tensor(), [cancelled](const Status& s, const Tensor& t) { cancelled->set_value({s, t}); });
  client->Cancel(id, errors::Cancelled("step over"));
  EXPECT_EQ(Wait(cancelled->get_future()).first.code(), Code::kCancelled);
  // The answer that comes after is dropped; the connection carries on.
  ASSERT_TRUE(rendezvous_->Find(1)->Send("a", Tensor::Scalar<float>(1)).ok());
  auto later = Recv(*client, 1, "b");
  ASSERT_TRUE(rendezvous_->Find(1)->Send("b", Tensor::Scalar<float>(2)).ok());
  auto [status, value] = Wait(std::move(later));
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(value.data<float>()[0], 2.0f);

  auto pending = Recv(*client, 2, "never");
  client.reset();
  EXPECT_EQ(Wait(std::move(pending)).first.code(), Code::kCancelled);
}

TEST_P(DirectTransportTest, AServerThatGoesAwayFailsTheReceivesAsUnavailable) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  auto pending = Recv(*client, 4, "never");
  server_.reset();
  auto [status, value] = Wait(std::move(pending));
  EXPECT_EQ(status.code(), Code::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(kPeer));
  EXPECT_TRUE(client->broken());
  EXPECT_EQ(Wait(Recv(*client, 4, "after")).first.code(), Code::kUnavailable);
  EXPECT_EQ(Connect("s3cret").status().code(), Code::kNotFound);
}

// A receive that waits long on a live server is kept: the server answers the heartbeats.
TEST_P(DirectTransportTest, AReceiveWaitingOnALiveServerOutlastsTheHeartbeatTimeout) {
  auto client = Connect("s3cret", UINT64_MAX, std::chrono::milliseconds(400));
  ASSERT_TRUE(client.ok()) << client.status();
  auto later = Recv(**client, 5, "late");
  EXPECT_EQ(later.wait_for(std::chrono::milliseconds(1600)), std::future_status::timeout);
  EXPECT_FALSE((*client)->broken());
  ASSERT_TRUE(rendezvous_->Find(5)->Send("late", Tensor::Scalar<float>(3)).ok());
  auto [status, value] = Wait(std::move(later));
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(value.data<float>()[0], 3.0f);
}

TEST_P(DirectTransportTest, WrongTokensAndGarbageAreTurnedAwayAndTheServerKeepsServing) {
  EXPECT_EQ(Connect("guess").status().code(), Code::kNotFound);
  EXPECT_EQ(Connect("").status().code(), Code::kNotFound);
  // A peer that says nothing holds no one up; one that sends garbage is told no.
  const int silent = RawClient();
  ASSERT_GE(silent, 0);
  const int garbage = RawClient();
  ASSERT_GE(garbage, 0);
  const std::string junk = Bytes({0xdeadbeef, 1, 0xffffffff}, {4, 4, 4});
  ASSERT_EQ(::write(garbage, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
  uint32_t answer = 0;
  const ssize_t n = ::read(garbage, &answer, sizeof(answer));
  EXPECT_TRUE(n <= 0 || answer != 0);
  ::close(garbage);

  auto client = Client();
  ASSERT_NE(client, nullptr);
  auto got = Recv(*client, 5, "y");
  ASSERT_TRUE(rendezvous_->Find(5)->Send("y", Tensor::Scalar<int64_t>(42)).ok());
  auto [status, value] = Wait(std::move(got));
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(value.data<int64_t>()[0], 42);
  ::close(silent);
}

// Whether the server has closed `fd`: a read sees the end of the stream (or a refusal).
bool ClosedByServer(int fd) {
  return testing::Eventually([fd] {
    char byte;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  });
}

// A peer is given no thread before it proved its token, and one that says nothing is
// closed when the hello's time is up: silence holds nothing for long.
TEST(DirectServerLimitsTest, SilentPeersGetNoThreadAndAreClosedAfterTheHelloTimeout) {
  const std::string address = testing::LoopbackAddress(testing::FreePort());
  ServerLimits limits;
  limits.hello_timeout = std::chrono::milliseconds(300);
  auto server = DirectServer::Start(address, kPeer, std::make_shared<IntraProcessRendezvousMgr>(), "s3cret", limits);
  ASSERT_TRUE(server.ok()) << server.status();
  const int64_t threads = testing::ThreadCount();
  std::vector<int> silent;
  for (int i = 0; i < 12; ++i) silent.push_back(RawSocket(address, false));
  const std::string half_hello = Bytes({0x54534854, 1, 6}, {4, 4, 4}) + "s3c";  // the token never finishes
  ASSERT_EQ(::write(silent[0], half_hello.data(), half_hello.size()), static_cast<ssize_t>(half_hello.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(testing::ThreadCount(), threads);
  for (int fd : silent) {
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(ClosedByServer(fd));
    ::close(fd);
  }
}

// Past the cap a process's next connection is closed at once; the others keep theirs, and
// a slot comes back when its connection ends.
TEST(DirectServerLimitsTest, ConnectionsAreCappedPerProcessAndInAll) {
  const std::string address = testing::LoopbackAddress(testing::FreePort());
  ServerLimits limits;
  limits.max_direct_connections_per_peer = 3;
  auto rendezvous = std::make_shared<IntraProcessRendezvousMgr>();
  auto server = DirectServer::Start(address, kPeer, rendezvous, "s3cret", limits);
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<std::shared_ptr<DirectClient>> clients;
  for (int i = 0; i < 3; ++i) {
    auto client = DirectClient::Connect(address, kPeer, "s3cret");
    ASSERT_TRUE(client.ok()) << client.status();
    clients.push_back(*client);
  }
  EXPECT_EQ(DirectClient::Connect(address, kPeer, "s3cret").status().code(), Code::kNotFound);
  clients.pop_back();
  ASSERT_TRUE(testing::Eventually([&] { return DirectClient::Connect(address, kPeer, "s3cret").ok(); }));

  const std::string other = testing::LoopbackAddress(testing::FreePort());
  limits.max_direct_connections = 2;
  auto small = DirectServer::Start(other, kPeer, rendezvous, "s3cret", limits);
  ASSERT_TRUE(small.ok()) << small.status();
  const int first = RawSocket(other, false);
  const int second = RawSocket(other, false);
  const int third = RawSocket(other, false);
  EXPECT_TRUE(ClosedByServer(third));
  for (int fd : {first, second, third}) ::close(fd);
}

// A connection's descriptor and threads are given back when its peer leaves, not when the
// next peer comes (the server used to close it only at its next accept).
TEST(DirectServerLimitsTest, APeerThatLeavesGivesBackItsDescriptorAndThreads) {
  const std::string address = testing::LoopbackAddress(testing::FreePort());
  auto rendezvous = std::make_shared<IntraProcessRendezvousMgr>();
  auto server = DirectServer::Start(address, kPeer, rendezvous, "s3cret");
  ASSERT_TRUE(server.ok()) << server.status();
  const int64_t descriptors = testing::DescriptorCount();
  const int64_t threads = testing::ThreadCount();
  {
    std::vector<std::shared_ptr<DirectClient>> clients;
    for (int i = 0; i < 10; ++i) {
      auto client = DirectClient::Connect(address, kPeer, "s3cret");
      ASSERT_TRUE(client.ok()) << client.status();
      clients.push_back(*client);
    }
    EXPECT_GE(testing::ThreadCount(), threads + 20);  // a reader and a writer each, and the clients' readers
  }
  EXPECT_TRUE(testing::Eventually([&] { return testing::DescriptorCount() == descriptors; }))
      << testing::DescriptorCount() << " descriptors, " << descriptors << " before";
  EXPECT_TRUE(testing::Eventually([&] { return testing::ThreadCount() == threads; }))
      << testing::ThreadCount() << " threads, " << threads << " before";
}

// Receives waiting for tensors hold memory on the server: past the cap the next is refused
// at once, and one that is answered makes room.
TEST(DirectServerLimitsTest, PendingReceivesAreCapped) {
  const std::string address = testing::LoopbackAddress(testing::FreePort());
  ServerLimits limits;
  limits.max_pending_receives = 3;
  auto rendezvous = std::make_shared<IntraProcessRendezvousMgr>();
  auto server = DirectServer::Start(address, kPeer, rendezvous, "s3cret", limits);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = DirectClient::Connect(address, kPeer, "s3cret");
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<std::future<std::pair<Status, Tensor>>> waiting;
  auto recv = [&](const std::string& key) {
    auto got = std::make_shared<std::promise<std::pair<Status, Tensor>>>();
    (*client)->Recv(9, key, kNoTimeout, Tensor(), [got](const Status& s, const Tensor& t) { got->set_value({s, t}); });
    return got->get_future();
  };
  for (int i = 0; i < 3; ++i) waiting.push_back(recv(StrCat("k", i)));
  auto refused = Wait(recv("k3"));
  EXPECT_EQ(refused.first.code(), Code::kResourceExhausted) << refused.first;
  ASSERT_TRUE(rendezvous->Find(9)->Send("k0", Tensor::Scalar(1.0f)).ok());
  EXPECT_TRUE(Wait(std::move(waiting[0])).first.ok());
  auto sent_later = recv("k4");
  ASSERT_TRUE(rendezvous->Find(9)->Send("k4", Tensor::Scalar(2.0f)).ok());
  EXPECT_TRUE(Wait(std::move(sent_later)).first.ok());
  rendezvous->Cleanup(9);
}

// A tensor of many socket buffers' worth arrives whole, read straight into its memory.
TEST_P(DirectTransportTest, ALargeTensorArrivesWhole) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  Tensor big(DataType::kInt32, TensorShape({8 << 20}));
  for (int64_t i = 0; i < big.NumElements(); ++i) big.data<int32_t>()[i] = static_cast<int32_t>(i * 7);
  auto got = Recv(*client, 10, "big");
  ASSERT_TRUE(rendezvous_->Find(10)->Send("big", big).ok());
  auto [status, value] = Wait(std::move(got));
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(value.NumElements(), big.NumElements());
  EXPECT_EQ(std::memcmp(value.raw_data(), big.raw_data(), big.TotalBytes()), 0);
}

INSTANTIATE_TEST_SUITE_P(Sockets, DirectTransportTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Tcp" : "Unix"; });

TEST(DirectServerTest, ATakenNameIsUnavailableForAServerButAClusterTaskStillStarts) {
  const std::string taken = testing::LoopbackAddress(testing::FreePort());
  auto rendezvous = std::make_shared<IntraProcessRendezvousMgr>();
  auto first = DirectServer::Start(taken, kPeer, rendezvous, "s3cret");
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = DirectServer::Start(taken, kPeer, rendezvous, "s3cret");
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("cannot serve direct peers"));

  const std::string address = testing::LoopbackAddress(testing::FreePort());
  const int squatter = RawSocket(address, true);
  ASSERT_GE(squatter, 0);
  auto cluster = ClusterSpec::FromJson(StrCat(R"({"ps": [")", address, R"("]})"));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto task = ClusterServer::Create(*cluster, "ps", 0, {});
  EXPECT_TRUE(task.ok()) << task.status();
  ::close(squatter);
}

// A TCP host that cannot be listened on leaves the Unix socket served.
TEST(DirectServerTest, AHostThatIsNotThisMachinesStillServesTheUnixSocket) {
  const std::string address = testing::LoopbackAddress(testing::FreePort());
  auto server = DirectServer::Start(address, kPeer, std::make_shared<IntraProcessRendezvousMgr>(), "s3cret", {},
                                    "no-such-host.invalid");
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->tcp_port(), 0);
  EXPECT_TRUE(DirectClient::Connect(address, kPeer, "s3cret").ok());
}

// Over TCP the cap per peer counts connections from one address, whatever their process.
TEST(DirectServerLimitsTest, TcpConnectionsAreCappedPerAddress) {
  const std::string address = testing::LoopbackAddress(testing::FreePort());
  ServerLimits limits;
  limits.max_direct_connections_per_address = 2;
  auto server = DirectServer::Start(address, kPeer, std::make_shared<IntraProcessRendezvousMgr>(), "s3cret", limits,
                                    "127.0.0.1");
  ASSERT_TRUE(server.ok()) << server.status();
  const uint16_t port = (*server)->tcp_port();
  std::vector<std::shared_ptr<DirectClient>> clients;
  for (int i = 0; i < 2; ++i) {
    auto client = DirectClient::ConnectTcp("127.0.0.1", port, kPeer, "s3cret");
    ASSERT_TRUE(client.ok()) << client.status();
    clients.push_back(*client);
  }
  EXPECT_EQ(DirectClient::ConnectTcp("127.0.0.1", port, kPeer, "s3cret").status().code(), Code::kNotFound);
  // The Unix socket's peers are counted apart, by process.
  EXPECT_TRUE(DirectClient::Connect(address, kPeer, "s3cret").ok());
  clients.pop_back();
  EXPECT_TRUE(testing::Eventually([&] { return DirectClient::ConnectTcp("127.0.0.1", port, kPeer, "s3cret").ok(); }));
}

// Anyone on the network may open TCP connections that never say their hello: past their
// own cap from one address (an eighth of all of them) the next is closed at once, those
// before it are kept until their hello's time is up, and peers on this machine and
// admitted ones are served all the same. Admitted TCP connections are capped apart from
// the Unix socket's.
TEST(DirectServerLimitsTest, SilentTcpPeersDoNotCrowdOutTheOthers) {
  const std::string address = testing::LoopbackAddress(testing::FreePort());
  ServerLimits limits;
  limits.max_direct_tcp_greetings = 16;
  limits.max_direct_connections = 2;
  auto rendezvous = std::make_shared<IntraProcessRendezvousMgr>();
  auto server = DirectServer::Start(address, kPeer, rendezvous, "s3cret", limits, "127.0.0.1");
  ASSERT_TRUE(server.ok()) << server.status();
  const uint16_t port = (*server)->tcp_port();
  auto admitted = DirectClient::ConnectTcp("127.0.0.1", port, kPeer, "s3cret");
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  std::vector<int> silent;
  for (int i = 0; i < 3; ++i) silent.push_back(RawTcpSocket(port));
  EXPECT_TRUE(ClosedByServer(silent[2]));
  for (int fd : {silent[0], silent[1]}) {
    char byte;
    EXPECT_EQ(::recv(fd, &byte, 1, MSG_DONTWAIT), -1);
    EXPECT_EQ(errno, EAGAIN);
  }
  std::vector<std::shared_ptr<DirectClient>> local;
  for (int i = 0; i < 2; ++i) {
    auto client = DirectClient::Connect(address, kPeer, "s3cret");
    ASSERT_TRUE(client.ok()) << client.status();
    local.push_back(*client);
  }
  auto got = std::make_shared<std::promise<std::pair<Status, Tensor>>>();
  (*admitted)->Recv(3, "t", kNoTimeout, Tensor(), [got](const Status& s, const Tensor& t) { got->set_value({s, t}); });
  ASSERT_TRUE(rendezvous->Find(3)->Send("t", Tensor::Scalar(5.0f)).ok());
  auto [status, value] = Wait(got->get_future());
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(value.data<float>()[0], 5.0f);

  // The silent ones gone, a second TCP peer with the token is admitted, a third is not.
  for (int fd : silent) ::close(fd);
  std::shared_ptr<DirectClient> second;
  ASSERT_TRUE(testing::Eventually([&] {
    auto client = DirectClient::ConnectTcp("127.0.0.1", port, kPeer, "s3cret");
    if (client.ok()) second = *client;
    return client.ok();
  }));
  EXPECT_EQ(DirectClient::ConnectTcp("127.0.0.1", port, kPeer, "s3cret").status().code(), Code::kNotFound);
}

TEST(DirectClientTest, TheHostOfAGrpcPeerIsItsAddressWithoutPortOrBrackets) {
  EXPECT_EQ(HostOfGrpcPeer("ipv4:198.18.0.2:2222"), "198.18.0.2");
  EXPECT_EQ(HostOfGrpcPeer("ipv6:[::1]:2222"), "::1");
  EXPECT_EQ(HostOfGrpcPeer("ipv6:%5B2001:db8::5%5D:2222"), "2001:db8::5");
  EXPECT_EQ(HostOfGrpcPeer("ipv6:%5Bfe80::1%25eth0%5D:2222"), "fe80::1%eth0");
  EXPECT_EQ(HostOfGrpcPeer("unix:/tmp/socket"), "");
  EXPECT_EQ(HostOfGrpcPeer("ipv6:::1"), "");
  EXPECT_EQ(HostOfGrpcPeer("ipv4:nocolon"), "");
}

TEST(DirectClientTest, ATcpPortWhereNothingListensIsNotFound) {
  auto server = DirectServer::Start(testing::LoopbackAddress(testing::FreePort()), kPeer,
                                    std::make_shared<IntraProcessRendezvousMgr>(), "s3cret", {}, "127.0.0.1");
  ASSERT_TRUE(server.ok()) << server.status();
  const uint16_t port = (*server)->tcp_port();
  server->reset();
  auto client = DirectClient::ConnectTcp("127.0.0.1", port, kPeer, "s3cret");
  EXPECT_EQ(client.status().code(), Code::kNotFound);
  EXPECT_THAT(std::string(client.status().message()), HasSubstr(kPeer));
  EXPECT_EQ(DirectClient::ConnectTcp("no-such-host.invalid", port, kPeer, "s3cret").status().code(), Code::kNotFound);
}

// A peer that admits the client, then answers with a header that lies about its elements.
TEST(DirectClientTest, AnAnswerThatLiesAboutItsSizeIsDataLossAndBreaksTheConnection) {
  const std::string address = testing::LoopbackAddress(testing::FreePort());
  const int listener = RawSocket(address, true);
  ASSERT_GE(listener, 0);
  std::thread fake([listener] {
    const int fd = AdmitOne(listener);
    if (fd < 0) return;
    char request[20 + 1];
    if (::recv(fd, request, sizeof(request), MSG_WAITALL) != static_cast<ssize_t>(sizeof(request))) return;
    uint64_t id;
    std::memcpy(&id, request, sizeof(id));
    const std::string header = *EncodeTensorHeader(Tensor(DataType::kFloat, TensorShape({1000})));
    std::string answer = Bytes({id, 0, 0, header.size(), 8}, {8, 4, 4, 4, 8}) + header + std::string(8, '\0');
    (void)::write(fd, answer.data(), answer.size());
    char rest;
    (void)::read(fd, &rest, 1);  // until the client hangs up
    ::close(fd);
  });
  auto client = DirectClient::Connect(address, kPeer, "token");
  ASSERT_TRUE(client.ok()) << client.status();
  std::promise<Status> got;
  (*client)->Recv(1, "k", kNoTimeout, Tensor(), [&got](const Status& s, const Tensor&) { got.set_value(s); });
  auto f = got.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const Status status = f.get();
  EXPECT_EQ(status.code(), Code::kDataLoss) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("8 bytes for a float32 tensor of shape [1000]"));
  EXPECT_TRUE((*client)->broken());
  client->reset();
  fake.join();
  ::close(listener);
}

// A peer that admits the client and then says nothing more, as a frozen process (SIGSTOP)
// would: a receive without a deadline fails once the heartbeats go unanswered.
TEST(DirectClientTest, AFrozenPeerIsFoundWithoutADeadline) {
  const std::string address = testing::LoopbackAddress(testing::FreePort());
  const int listener = RawSocket(address, true);
  ASSERT_GE(listener, 0);
  std::atomic<int> heartbeats{0};
  std::thread frozen([listener, &heartbeats] {
    const int fd = AdmitOne(listener);
    if (fd < 0) return;
    // Reads what comes (the request, then heartbeats: 20 bytes with an empty key) until the
    // client hangs up, answering nothing.
    char first[20 + 1];  // the receive of key "k"
    (void)::recv(fd, first, sizeof(first), MSG_WAITALL);
    char request[20];
    while (::recv(fd, request, sizeof(request), MSG_WAITALL) == static_cast<ssize_t>(sizeof(request))) ++heartbeats;
    ::close(fd);
  });
  auto client = DirectClient::Connect(address, kPeer, "token", UINT64_MAX, std::chrono::milliseconds(500));
  ASSERT_TRUE(client.ok()) << client.status();
  const auto start = std::chrono::steady_clock::now();
  std::promise<Status> got;
  (*client)->Recv(1, "k", kNoTimeout, Tensor(), [&got](const Status& s, const Tensor&) { got.set_value(s); });
  auto f = got.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const Status status = f.get();
  EXPECT_EQ(status.code(), Code::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(StrCat(kPeer, " sent nothing for 500 ms, heartbeats unanswered")));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  EXPECT_TRUE((*client)->broken());
  client->reset();
  frozen.join();
  EXPECT_GE(heartbeats.load(), 1);
  ::close(listener);
}

TEST(DirectFramesTest, RequestHeadsAreCheckedBeforeTheKeyIsRead) {
  auto ok = ParseDirectRequestHead(Bytes({9, 12, 5}, {8, 8, 4}));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->id, 9u);
  EXPECT_EQ(ok->step_id, 12);
  EXPECT_EQ(ok->key_bytes, 5u);
  EXPECT_EQ(ParseDirectRequestHead(Bytes({9, 12, 1u << 30}, {8, 8, 4})).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseDirectRequestHead("short").status().code(), Code::kInvalidArgument);
}

TEST(DirectFramesTest, AnswerHeadsRefuseUnknownCodesHugeLengthsAndMixedAnswers) {
  const std::initializer_list<int> sizes{8, 4, 4, 4, 8};
  auto ok = ParseDirectAnswerHead(Bytes({1, 0, 0, 10, 64}, sizes));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->element_bytes, 64u);
  auto error = ParseDirectAnswerHead(Bytes({1, 10, 5, 0, 0}, sizes));
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_EQ(error->code, Code::kAborted);
  for (const std::string& bad : {Bytes({1, 99, 0, 0, 0}, sizes), Bytes({1, 3, 1u << 30, 0, 0}, sizes),
                                 Bytes({1, 0, 0, 4096, 0}, sizes), Bytes({1, 3, 4, 10, 0}, sizes),
                                 Bytes({1, 0, 0, 0, 64}, sizes), std::string(27, '\0')}) {
    EXPECT_EQ(ParseDirectAnswerHead(bad).status().code(), Code::kInvalidArgument);
  }
  // OK with neither header nor elements: a dead value.
  auto dead = ParseDirectAnswerHead(Bytes({1, 0, 0, 0, 0}, sizes));
  ASSERT_TRUE(dead.ok()) << dead.status();
  EXPECT_EQ(dead->header_bytes, 0u);
}

}  // namespace
}  // namespace tessera
