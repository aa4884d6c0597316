// A cluster task's server on loopback: it answers with its task's devices, refuses what it
// must (a second server on its port, a request without the token), and stops cleanly.
#include "distributed/cluster_server.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "distributed/grpc_recv_transport.h"
#include "distributed/worker_channels.h"
#include "graph/platform/logging.h"
#include "tests/distributed/free_port.h"
#include "tests/distributed/process_stats.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::FreePort;
using testing::LoopbackAddress;

constexpr std::chrono::milliseconds kTimeout(5000);

ClusterSpec TwoTasks(int ps_port, int worker_port) {
  StatusOr<ClusterSpec> c = ClusterSpec::FromJson(StrCat(R"({"ps": [")", LoopbackAddress(ps_port),
                                                         R"("], "worker": [")", LoopbackAddress(worker_port), R"("]})"));
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(ClusterServerTest, ATaskServesItsDevicesUnderItsOwnName) {
  const int port = FreePort();
  ClusterServerOptions options;
  options.config.device_count = {{"CPU", 2}};
  auto server = ClusterServer::Create(TwoTasks(FreePort(), port), "worker", 0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->target(), "grpc://" + LoopbackAddress(port));
  EXPECT_EQ((*server)->task_name(), "/job:worker/replica:0/task:0");
  StatusOr<TaskStatus> status = GetTaskStatus((*server)->target(), "", kTimeout);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->task, "/job:worker/replica:0/task:0");
  ASSERT_EQ(status->devices.size(), 2u);
  EXPECT_EQ(status->devices[0].name, "/job:worker/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(status->devices[1].name, "/job:worker/replica:0/task:0/device:CPU:1");
  EXPECT_EQ(status->devices[1].device_type, "CPU");
  EXPECT_NE(status->devices[0].incarnation, 0u);
  // The in-process half holds the same devices.
  EXPECT_EQ((*server)->local()->devices()->devices()[0]->incarnation(), status->devices[0].incarnation);
}

TEST(ClusterServerTest, ASecondServerOnTheSamePortIsUnavailable) {
  const ClusterSpec cluster = TwoTasks(FreePort(), FreePort());
  auto first = ClusterServer::Create(cluster, "ps", 0, {});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = ClusterServer::Create(cluster, "ps", 0, {});
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("/job:ps/replica:0/task:0 cannot listen on 127.0.0.1:"));
  // The first is untouched.
  EXPECT_TRUE(GetTaskStatus((*first)->target(), "", kTimeout).ok());
}

TEST(ClusterServerTest, ATaskOutsideTheClusterIsAClearError) {
  const ClusterSpec cluster = TwoTasks(FreePort(), FreePort());
  EXPECT_THAT(std::string(ClusterServer::Create(cluster, "worker", 1, {}).status().message()),
              HasSubstr("task index 1 is out of range: job 'worker' has 1 task"));
  EXPECT_THAT(std::string(ClusterServer::Create(cluster, "chief", 0, {}).status().message()),
              HasSubstr("no job 'chief'"));
}

struct CapturingSink : LogSink {
  std::mutex mu;
  std::string text;
  void Write(LogSeverity, std::string_view message) override {
    std::lock_guard<std::mutex> lock(mu);
    text += std::string(message) + "\n";
  }
};

TEST(ClusterServerTest, TheTokenIsRequiredOnEveryRequestAndRefusalsAreLogged) {
  ClusterServerOptions options;
  options.token = "s3cret-token";
  auto server = ClusterServer::Create(TwoTasks(FreePort(), FreePort()), "ps", 0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  CapturingSink sink;
  SetLogSink(&sink);
  StatusOr<TaskStatus> none = GetTaskStatus((*server)->target(), "", kTimeout);
  StatusOr<TaskStatus> wrong = GetTaskStatus((*server)->target(), "s3cret-tokem", kTimeout);
  StatusOr<TaskStatus> longer = GetTaskStatus((*server)->target(), "s3cret-token-and-more", kTimeout);
  SetLogSink(nullptr);
  EXPECT_EQ(none.status().code(), Code::kUnauthenticated);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("without the cluster token"));
  EXPECT_EQ(wrong.status().code(), Code::kUnauthenticated);
  EXPECT_THAT(std::string(wrong.status().message()), HasSubstr("with a wrong cluster token"));
  EXPECT_EQ(longer.status().code(), Code::kUnauthenticated);
  EXPECT_THAT(sink.text, HasSubstr("/job:ps/replica:0/task:0: refused GetStatus from "));
  StatusOr<TaskStatus> right = GetTaskStatus((*server)->target(), "s3cret-token", kTimeout);
  EXPECT_TRUE(right.ok()) << right.status();
}

// gRPC caps a call's metadata at 8 KiB and refuses control characters in it: a token it
// could not carry would start a server that no call reaches.
TEST(ClusterServerTest, ATokenThatCannotRideInACallIsRefusedAtStart) {
  for (const std::string& token : {std::string(8000, 'x'), std::string("line\nbreak"), std::string("\x01")}) {
    ClusterServerOptions options;
    options.token = token;
    auto server = ClusterServer::Create(TwoTasks(FreePort(), FreePort()), "ps", 0, options);
    EXPECT_EQ(server.status().code(), Code::kInvalidArgument) << token.size();
    EXPECT_THAT(std::string(server.status().message()), HasSubstr("the cluster token"));
    EXPECT_THAT(std::string(server.status().message()), ::testing::Not(HasSubstr(token)));
  }
  ClusterServerOptions options;
  options.token = std::string(kMaxClusterTokenBytes, 't');
  auto server = ClusterServer::Create(TwoTasks(FreePort(), FreePort()), "ps", 0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE(GetTaskStatus((*server)->target(), options.token, kTimeout).ok());
}

TEST(ClusterServerTest, NobodyListeningIsUnavailableWithinTheDeadline) {
  const auto start = std::chrono::steady_clock::now();
  StatusOr<TaskStatus> status = GetTaskStatus(LoopbackAddress(FreePort()), "", std::chrono::milliseconds(500));
  EXPECT_TRUE(status.status().code() == Code::kUnavailable || status.status().code() == Code::kDeadlineExceeded)
      << status.status();
  EXPECT_THAT(std::string(status.status().message()), HasSubstr("did not answer"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ClusterServerTest, StopFromAnotherThreadEndsJoin) {
  auto server = ClusterServer::Create(TwoTasks(FreePort(), FreePort()), "worker", 0, {});
  ASSERT_TRUE(server.ok()) << server.status();
  std::thread stopper([&] { (*server)->Stop(); });
  (*server)->Join();
  stopper.join();
  EXPECT_FALSE(GetTaskStatus((*server)->target(), "", std::chrono::milliseconds(500)).ok());
}

// Servers of one process stopped in every order, at once or with grace, while calls between
// them are in flight (receives waiting on each, status calls arriving): a program that stops
// a server must never crash, under ASan included.
TEST(ClusterServerTest, ServersOfOneProcessStopInAnyOrderWithCallsInFlight) {
  for (int round = 0; round < 6; ++round) {
    StatusOr<ClusterSpec> cluster =
        ClusterSpec::FromJson(StrCat(R"({"ps": [")", LoopbackAddress(FreePort()), R"("], "worker": [")",
                                     LoopbackAddress(FreePort()), R"(", ")", LoopbackAddress(FreePort()), R"("]})"));
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    ClusterServerOptions options;
    options.token = "t0ken";
    options.direct_transport = round % 2 == 1;
    const std::vector<std::pair<std::string, int>> tasks = {{"ps", 0}, {"worker", 0}, {"worker", 1}};
    std::vector<std::unique_ptr<ClusterServer>> servers;
    std::vector<std::string> addresses;
    for (const auto& [job, task] : tasks) {
      auto server = ClusterServer::Create(*cluster, job, task, options);
      ASSERT_TRUE(server.ok()) << server.status();
      servers.push_back(std::move(*server));
      addresses.push_back(*cluster->TaskAddress(job, task));
    }
    auto ended = std::make_shared<std::atomic<int>>(0);
    std::vector<std::shared_ptr<GrpcRecvTransport>> transports;
    std::vector<std::shared_ptr<RecvTransport::Recv>> receives;
    for (size_t t = 0; t < tasks.size(); ++t) {
      transports.push_back(std::make_shared<GrpcRecvTransport>(
          grpc::CreateChannel(addresses[t], grpc::InsecureChannelCredentials()), servers[t]->task_name(), "t0ken"));
      for (int i = 0; i < 4; ++i) {
        const std::string key = Rendezvous::CreateKey(StrCat(servers[t]->task_name(), "/device:CPU:0"), 1,
                                                      "/job:worker/replica:0/task:9/device:CPU:0", StrCat("k", i, ":0"));
        receives.push_back(transports[t]->NewRecv(100 + i, key, std::chrono::milliseconds(0), Tensor(),
                                                  [ended](const Status&, const Tensor&) { ++*ended; }));
        receives.back()->Start();
      }
    }
    std::atomic<bool> stop{false};
    std::thread asker([&] {
      for (size_t i = 0; !stop; ++i) (void)GetTaskStatus(addresses[i % addresses.size()], "t0ken", kTimeout / 25);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    // Stopped at once (calls in flight cancelled), or by the destructor's grace period.
    const bool at_once = round / 2 % 2 == 0;
    for (size_t k = 0; k < servers.size(); ++k) {
      std::unique_ptr<ClusterServer>& server = servers[(round + k) % servers.size()];
      if (at_once) server->Stop(std::chrono::milliseconds(0));
      server.reset();
    }
    stop = true;
    asker.join();
    EXPECT_TRUE(testing::Eventually([&] { return *ended == static_cast<int>(receives.size()); }))
        << *ended << " of " << receives.size() << " receives ended";
  }
}

}  // namespace
}  // namespace tessera
