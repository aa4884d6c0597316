// A cluster task's server on loopback: it answers with its task's devices, refuses what it
// must (a second server on its port, a request without the token), and stops cleanly.
#include "distributed/cluster_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "graph/platform/logging.h"
#include "tests/distributed/free_port.h"

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

}  // namespace
}  // namespace tessera
