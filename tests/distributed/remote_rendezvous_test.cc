// A step's tensors between two tasks of a cluster (two servers in this process, talking
// exactly as two processes would), over each transport: loopback gRPC, and the direct
// Unix socket that tasks of one machine use. A 64 MiB tensor arrives whole, a receive made
// before the send waits for it, an abort on the sender's side, a sender that is not there or
// leaves, or a deadline fails the receive with a reason, and local keys stay local.
#include "distributed/remote_rendezvous.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "distributed/cluster_server.h"
#include "distributed/rpc_util.h"
#include "tests/distributed/free_port.h"
#include "tests/distributed/process_stats.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::FreePort;
using testing::LoopbackAddress;

constexpr char kPsCpu[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorkerCpu[] = "/job:worker/replica:0/task:0/device:CPU:0";

// The parameter: whether the servers serve direct peers.
class RemoteRendezvousTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    StatusOr<ClusterSpec> c = ClusterSpec::FromJson(StrCat(R"({"ps": [")", LoopbackAddress(FreePort()),
                                                           R"("], "worker": [")", LoopbackAddress(FreePort()), R"("]})"));
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = *c;
    ClusterServerOptions options;
    options.token = "t0ken";
    options.direct_transport = GetParam();
    auto ps = ClusterServer::Create(cluster_, "ps", 0, options);
    ASSERT_TRUE(ps.ok()) << ps.status();
    ps_ = std::move(*ps);
    auto worker = ClusterServer::Create(cluster_, "worker", 0, options);
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = std::move(*worker);
    channels_ = std::make_shared<WorkerChannels>(cluster_, "t0ken");
    // The transport under test is the one the receives take.
    EXPECT_EQ(channels_->Direct("ps", 0) != nullptr, GetParam());
  }

  std::unique_ptr<RemoteRendezvous> WorkerSide(int64_t step, std::chrono::milliseconds timeout = kTimeout) {
    return std::make_unique<RemoteRendezvous>(worker_->local()->rendezvous()->Find(step), "worker", 0, channels_, step,
                                              timeout);
  }
  std::string KeyFromPs(const std::string& tensor) const {
    const uint64_t incarnation = ps_->local()->devices()->devices()[0]->incarnation();
    return Rendezvous::CreateKey(kPsCpu, incarnation, kWorkerCpu, tensor);
  }
  // Receives `key` through `r`, waiting at most 30 s.
  static std::pair<Status, Tensor> Receive(Rendezvous& r, const std::string& key) {
    std::promise<std::pair<Status, Tensor>> got;
    r.RecvAsync(key, [&got](const Status& s, const Tensor& t) { got.set_value({s, t}); });
    auto f = got.get_future();
    if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      return {errors::DeadlineExceeded("test gave up"), Tensor()};
    }
    return f.get();
  }

  static constexpr std::chrono::milliseconds kTimeout{20000};
  ClusterSpec cluster_;
  std::unique_ptr<ClusterServer> ps_, worker_;
  std::shared_ptr<WorkerChannels> channels_;
};

TEST_P(RemoteRendezvousTest, A64MiBTensorCrossesWhole) {
  const int64_t step = NewStepId();
  Tensor big(DataType::kFloat, TensorShape({int64_t{16} << 20}));
  for (int64_t i = 0; i < big.NumElements(); ++i) big.data<float>()[i] = static_cast<float>(i % 1000003);
  ASSERT_TRUE(ps_->local()->rendezvous()->Find(step)->Send(KeyFromPs("big:0"), big).ok());
  auto r = WorkerSide(step);
  auto [status, value] = Receive(*r, KeyFromPs("big:0"));
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(value.shape(), big.shape());
  EXPECT_EQ(std::memcmp(value.raw_data(), big.raw_data(), big.TotalBytes()), 0);
  ps_->local()->rendezvous()->Cleanup(step);
}

TEST_P(RemoteRendezvousTest, AReceiveBeforeTheSendWaitsForIt) {
  const int64_t step = NewStepId();
  auto r = WorkerSide(step);
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_TRUE(ps_->local()->rendezvous()->Find(step)->Send(KeyFromPs("late:0"), Tensor::Scalar<int32_t>(7)).ok());
  });
  auto [status, value] = Receive(*r, KeyFromPs("late:0"));
  sender.join();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(value.data<int32_t>()[0], 7);
}

TEST_P(RemoteRendezvousTest, AnAbortOnTheSendersSideReachesTheReceiver) {
  const int64_t step = NewStepId();
  auto r = WorkerSide(step);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ps_->local()->rendezvous()->Find(step)->StartAbort(errors::Aborted("ps step failed: node w ran out of memory"));
  });
  auto [status, value] = Receive(*r, KeyFromPs("never:0"));
  aborter.join();
  EXPECT_EQ(status.code(), Code::kAborted) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("from /job:ps/replica:0/task:0"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("node w ran out of memory"));
}

// gRPC cancels a stopping server's calls: unanswered, a Cancelled this side did not ask for
// is the peer gone, and one it asked for stays Cancelled.
TEST(FromGrpcTest, ACancelThisSideDidNotAskForIsThePeerGone) {
  const grpc::Status cancelled(grpc::StatusCode::CANCELLED, "Cancelled");
  const grpc::ClientContext unanswered;
  const Status gone = FromGrpc(cancelled, unanswered, "/job:ps/replica:0/task:0");
  EXPECT_EQ(gone.code(), Code::kUnavailable) << gone;
  EXPECT_THAT(std::string(gone.message()), HasSubstr("/job:ps/replica:0/task:0 stopped serving the call"));
  EXPECT_EQ(FromGrpc(cancelled, unanswered, "/job:ps/replica:0/task:0", /*cancelled_here=*/true).code(),
            Code::kCancelled);
}

// The ps's server is destroyed (as an embedding program stops it) while receives from it
// are in flight, and again after another takes its place: each receive fails naming the ps,
// and nothing else in the process notices. (Destroying a server of this process used to
// trip a double free in gRPC now and then under ASan.)
TEST_P(RemoteRendezvousTest, ASenderThatIsGoneIsUnavailableNamingItsTask) {
  const std::string ps_address = *cluster_.TaskAddress("ps", 0);
  for (int round = 0; round < 5; ++round) {
    const int64_t step = NewStepId();
    auto r = WorkerSide(step, std::chrono::milliseconds(5000));
    std::vector<std::future<std::pair<Status, Tensor>>> waiting;
    for (int i = 0; i < 8; ++i) {
      waiting.push_back(std::async(std::launch::async, Receive, std::ref(*r), KeyFromPs(StrCat("never", i, ":0"))));
    }
    const std::string late_key = KeyFromPs("late:0");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ps_.reset();
    for (auto& w : waiting) {
      auto [status, value] = w.get();
      EXPECT_TRUE(status.code() == Code::kUnavailable || status.code() == Code::kDeadlineExceeded ||
                  status.code() == Code::kAborted)
          << status;
      EXPECT_THAT(std::string(status.message()), HasSubstr("/job:ps/replica:0/task:0")) << status;
    }
    auto [late, value] = Receive(*WorkerSide(NewStepId(), std::chrono::milliseconds(2000)), late_key);
    EXPECT_TRUE(late.code() == Code::kUnavailable || late.code() == Code::kDeadlineExceeded) << late;
    EXPECT_THAT(std::string(late.message()), HasSubstr("/job:ps/replica:0/task:0")) << late;
    // Another server in its place, on the same address.
    ClusterServerOptions options;
    options.token = "t0ken";
    options.direct_transport = GetParam();
    ASSERT_TRUE(testing::Eventually([&] {
      auto ps = ClusterServer::Create(cluster_, "ps", 0, options);
      if (ps.ok()) ps_ = std::move(*ps);
      return ps.ok();
    })) << "no new server at " << ps_address;
  }
}

TEST_P(RemoteRendezvousTest, AbortingTheReceiverCancelsItsCallsAndLocalKeysStayLocal) {
  const int64_t step = NewStepId();
  auto r = WorkerSide(step);
  std::promise<Status> got;
  r->RecvAsync(KeyFromPs("pending:0"), [&got](const Status& s, const Tensor&) { got.set_value(s); });
  r->StartAbort(errors::Cancelled("the worker's step was cancelled"));
  auto f = got.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(f.get().code(), Code::kCancelled);

  const int64_t local_step = NewStepId();
  auto local = WorkerSide(local_step);
  const uint64_t inc = worker_->local()->devices()->devices()[0]->incarnation();
  const std::string key = Rendezvous::CreateKey(kWorkerCpu, inc, kWorkerCpu, "here:0");
  ASSERT_TRUE(local->Send(key, Tensor::Scalar<float>(2.5f)).ok());
  auto [status, value] = Receive(*local, key);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(value.data<float>()[0], 2.5f);
}

TEST_P(RemoteRendezvousTest, AWrongTokenIsRefused) {
  const int64_t step = NewStepId();
  auto wrong = std::make_shared<WorkerChannels>(cluster_, "guess");
  RemoteRendezvous r(worker_->local()->rendezvous()->Find(step), "worker", 0, wrong, step, kTimeout);
  auto [status, value] = Receive(r, KeyFromPs("x:0"));
  EXPECT_EQ(status.code(), Code::kUnauthenticated) << status;
}

TEST_P(RemoteRendezvousTest, StringsAndScalarsCross) {
  const int64_t step = NewStepId();
  Tensor words(DataType::kString, TensorShape({3}));
  words.data<std::string>()[0] = "";
  words.data<std::string>()[1] = "ps";
  words.data<std::string>()[2] = std::string(100000, 'x');
  auto ps_side = ps_->local()->rendezvous()->Find(step);
  ASSERT_TRUE(ps_side->Send(KeyFromPs("words:0"), words).ok());
  ASSERT_TRUE(ps_side->Send(KeyFromPs("one:0"), Tensor::Scalar<double>(0.25)).ok());
  ASSERT_TRUE(ps_side->Send(KeyFromPs("none:0"), Tensor(DataType::kFloat, TensorShape({0, 4}))).ok());
  auto r = WorkerSide(step);
  auto [s1, got_words] = Receive(*r, KeyFromPs("words:0"));
  ASSERT_TRUE(s1.ok()) << s1;
  ASSERT_EQ(got_words.NumElements(), 3);
  EXPECT_EQ(got_words.data<std::string>()[1], "ps");
  EXPECT_EQ(got_words.data<std::string>()[2], std::string(100000, 'x'));
  auto [s2, one] = Receive(*r, KeyFromPs("one:0"));
  ASSERT_TRUE(s2.ok()) << s2;
  EXPECT_EQ(one.data<double>()[0], 0.25);
  auto [s3, none] = Receive(*r, KeyFromPs("none:0"));
  ASSERT_TRUE(s3.ok()) << s3;
  EXPECT_EQ(none.shape(), TensorShape({0, 4}));
  ps_->local()->rendezvous()->Cleanup(step);
}

// A dead value (a Switch's untaken branch, in a loop spanning tasks) arrives dead.
TEST_P(RemoteRendezvousTest, ADeadValueCrossesAsDead) {
  const int64_t step = NewStepId();
  auto ps_side = ps_->local()->rendezvous()->Find(step);
  ASSERT_TRUE(ps_side->Send(KeyFromPs("dead:0"), Tensor()).ok());
  ASSERT_TRUE(ps_side->Send(KeyFromPs("live:0"), Tensor::Scalar(3)).ok());
  auto r = WorkerSide(step);
  auto [s1, dead] = Receive(*r, KeyFromPs("dead:0"));
  ASSERT_TRUE(s1.ok()) << s1;
  EXPECT_FALSE(dead.IsInitialized());
  auto [s2, live] = Receive(*r, KeyFromPs("live:0"));
  ASSERT_TRUE(s2.ok()) << s2;
  EXPECT_EQ(live.data<int32_t>()[0], 3);
  ps_->local()->rendezvous()->Cleanup(step);
}

TEST_P(RemoteRendezvousTest, AReceivePastItsDeadlineIsDeadlineExceeded) {
  const int64_t step = NewStepId();
  auto r = WorkerSide(step, std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  auto [status, value] = Receive(*r, KeyFromPs("never:0"));
  EXPECT_EQ(status.code(), Code::kDeadlineExceeded) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("/job:ps/replica:0/task:0"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // What comes after the deadline is dropped, and the connection still serves.
  auto ps_side = ps_->local()->rendezvous()->Find(step);
  ASSERT_TRUE(ps_side->Send(KeyFromPs("never:0"), Tensor::Scalar<float>(1)).ok());
  ASSERT_TRUE(ps_side->Send(KeyFromPs("next:0"), Tensor::Scalar<float>(2)).ok());
  auto [next_status, next] = Receive(*r, KeyFromPs("next:0"));
  ASSERT_TRUE(next_status.ok()) << next_status;
  EXPECT_EQ(next.data<float>()[0], 2.0f);
  ps_->local()->rendezvous()->Cleanup(step);
}

TEST_P(RemoteRendezvousTest, ASenderThatLeavesMidReceiveFailsItNamingTheTask) {
  const int64_t step = NewStepId();
  auto r = WorkerSide(step);
  std::promise<Status> got;
  r->RecvAsync(KeyFromPs("pending:0"), [&got](const Status& s, const Tensor&) { got.set_value(s); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ps_->Stop(std::chrono::milliseconds(100));
  auto f = got.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const Status status = f.get();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("/job:ps/replica:0/task:0"));
}

INSTANTIATE_TEST_SUITE_P(Transports, RemoteRendezvousTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Direct" : "Grpc"; });

// An IPv4 address of this machine's that is not a loopback one; empty when it has none.
std::string NonLoopbackAddress() {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return "";
  std::string found;
  for (const ifaddrs* a = all; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET || (a->ifa_flags & IFF_UP) == 0 ||
        (a->ifa_flags & IFF_LOOPBACK) != 0) {
      continue;
    }
    char text[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof(text))) {
      found = text;
    }
  }
  freeifaddrs(all);
  return found;
}

// A task this process cannot reach by its Unix socket (the name is taken by a socket that
// does not listen, as if the task ran on another machine) is reached over the TCP port its
// GetStatus names, connected in the background: the first asks find no direct connection,
// later ones do, and a tensor crosses it.
TEST(RemoteRendezvousOverTcpTest, ATaskOffThisMachineIsReachedOverTheTcpPortItNames) {
  const std::string ip = NonLoopbackAddress();
  if (ip.empty()) GTEST_SKIP() << "this machine has no address but the loopback's";
  const std::string address = StrCat(ip, ":", FreePort());
  const int squatter = ::socket(AF_UNIX, SOCK_STREAM, 0);
  const std::string name = DirectSocketName(address);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, name.data(), name.size());
  ASSERT_EQ(::bind(squatter, reinterpret_cast<sockaddr*>(&a),
                   static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size())),
            0);
  StatusOr<ClusterSpec> cluster = ClusterSpec::FromJson(
      StrCat(R"({"ps": [")", address, R"("], "worker": [")", LoopbackAddress(FreePort()), R"("]})"));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ClusterServerOptions options;
  options.token = "t0ken";
  auto ps = ClusterServer::Create(*cluster, "ps", 0, options);
  ASSERT_TRUE(ps.ok()) << ps.status();
  auto channels = std::make_shared<WorkerChannels>(*cluster, "t0ken");
  EXPECT_EQ(channels->Direct("ps", 0), nullptr);
  std::shared_ptr<DirectClient> client;
  ASSERT_TRUE(testing::Eventually([&] { return (client = channels->Direct("ps", 0)) != nullptr; }));

  const int64_t step = NewStepId();
  ASSERT_TRUE((*ps)->local()->rendezvous()->Find(step)->Send("t", Tensor::Scalar<int32_t>(11)).ok());
  std::promise<std::pair<Status, Tensor>> got;
  client->Recv(step, "t", std::chrono::milliseconds(20000), Tensor(),
               [&got](const Status& s, const Tensor& t) { got.set_value({s, t}); });
  auto f = got.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  auto [status, value] = f.get();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(value.data<int32_t>()[0], 11);
  (*ps)->local()->rendezvous()->Cleanup(step);
  ::close(squatter);
}

}  // namespace
}  // namespace tessera
