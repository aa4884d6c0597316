// The cluster between machines, on emulated hosts (tests/tools/emulated_hosts.h): tasks in
// network namespaces of their own, reaching each other only over a bridge through 10 Gbit/s
// links, never over loopback or the direct transport's Unix socket (an abstract one, which a
// namespace keeps to itself). Multi-worker training over three hosts, each worker reading its
// own input and the gradients all-reduced by the engine's ring or by Gloo, equals one
// process; a ps and two workers on three hosts train in sync; a 64 MiB tensor crosses a link
// over the direct transport's TCP; a killed task and a link taken down fail the step within
// its timeout naming the task, and the link brought back works again. Latency and loss need
// netem, which this machine's kernel lacks: that case skips, saying so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "kernels/collectives/gloo_all_reduce.h"
#include "tests/tools/child_process.h"
#include "tests/tools/emulated_hosts.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Child;
using testing::EmulatedHosts;

constexpr int kPort = 2222;

std::string Workers(int hosts) {
  std::string cluster = R"({"worker": [)";
  for (int h = 1; h <= hosts; ++h) cluster += StrCat(h > 1 ? ", " : "", "\"", EmulatedHosts::Address(h, kPort), "\"");
  return cluster + "]}";
}

// With the gradients all-reduced by the engine's ring ("auto", over gRPC and then the
// direct transport's TCP) and by Gloo.
class MultiWorkerOverHostsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MultiWorkerOverHostsTest, TrainingOverThreeHostsEqualsOneProcess) {
  const std::string all_reduce = GetParam();
  if (all_reduce == "gloo" && !GlooAllReduce::Available()) GTEST_SKIP() << "this build has no Gloo";
  EmulatedHosts hosts(3);
  if (!hosts.skip_reason().empty()) GTEST_SKIP() << hosts.skip_reason();
  const std::string prefix = StrCat(::testing::TempDir(), "/emulated_hosts_", getpid(), ".ckpt");
  std::vector<std::unique_ptr<Child>> workers;
  for (int task = 2; task >= 0; --task) {  // the chief last: it waits for the others
    std::vector<std::string> args = {"train", "--mode", "multi-worker", "--cluster", Workers(3), "--task",
                                     std::to_string(task), "--epochs", "1", "--batch", "48", "--train-limit", "240",
                                     "--test-limit", "200", "--no-progress", "--all-reduce", all_reduce};
    if (task == 0) args.insert(args.end(), {"--checkpoint", prefix});
    // The chief's log (stderr) is read with what it prints.
    workers.push_back(std::make_unique<Child>(args, "", [enter = hosts.Enter(task + 1), task] {
      enter();
      if (task == 0) dup2(STDOUT_FILENO, STDERR_FILENO);
    }));
  }
  for (auto& w : workers) {
    EXPECT_EQ(w->Wait(std::chrono::seconds(180)), 0) << w->ReadUntil("\x01never", std::chrono::seconds(1));
  }
  const std::string chief = workers.back()->ReadUntil("\x01never", std::chrono::seconds(1));
  EXPECT_THAT(chief, HasSubstr(StrCat("worker 0 of 3 serves grpc://", EmulatedHosts::Address(1, kPort))));
  const std::string by_gloo =
      StrCat("member 0 of 3 on /job:worker/replica:0/task:0/device:CPU:0 reduces over Gloo from ", EmulatedHosts::Ip(1));
  if (all_reduce == "gloo") EXPECT_THAT(chief, HasSubstr(by_gloo));
  else EXPECT_THAT(chief, ::testing::Not(HasSubstr(by_gloo)));
  // Each worker reads its own input: the chief sends the others none.
  for (int task : {1, 2}) {
    EXPECT_THAT(chief, ::testing::ContainsRegex(StrCat("task:", task, "/device:CPU:0: [^\n]* 1 IteratorGetNext")));
  }
  testing::ExpectCheckpointEquals(prefix, testing::OneProcess());
}

INSTANTIATE_TEST_SUITE_P(AllReduce, MultiWorkerOverHostsTest, ::testing::Values("auto", "gloo"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

double TestAccuracy(const std::string& printed) {
  const size_t at = printed.find("test accuracy ");
  return at == std::string::npos ? -1 : std::atof(printed.c_str() + at + 14);
}

// Placement and variables over three hosts: the ps on host 1 keeps the variables, the
// workers on hosts 2 and 3 average every step's gradients there (sync) and end on the same
// variables.
TEST(EmulatedHostsTest, PsAndWorkersOnThreeHostsTrainInSync) {
  EmulatedHosts hosts(3);
  if (!hosts.skip_reason().empty()) GTEST_SKIP() << hosts.skip_reason();
  const std::string cluster = StrCat(R"({"ps": [")", EmulatedHosts::Address(1, kPort), R"("], "worker": [")",
                                     EmulatedHosts::Address(2, kPort), R"(", ")", EmulatedHosts::Address(3, kPort),
                                     R"("]})");
  Child ps({"server", "--cluster", cluster, "--job", "ps", "--task", "0"}, "", hosts.Enter(1));
  ASSERT_THAT(ps.ReadUntil("Started server", std::chrono::seconds(20)), HasSubstr("Started server"));
  std::vector<std::unique_ptr<Child>> workers;
  for (int task : {1, 0}) {
    workers.push_back(std::make_unique<Child>(
        std::vector<std::string>{"train", "--mode", "sync", "--cluster", cluster, "--job", "worker", "--task",
                                 std::to_string(task), "--epochs", "1", "--train-limit", "2000", "--test-limit", "300",
                                 "--batch", "50", "--no-progress"},
        "", hosts.Enter(task + 2)));
  }
  std::vector<std::string> printed;
  for (auto& w : workers) {
    const int code = w->Wait(std::chrono::seconds(180));
    printed.push_back(w->ReadUntil("\x01never", std::chrono::seconds(1)));
    EXPECT_EQ(code, 0) << printed.back();
  }
  const std::string& chief = printed[1];
  EXPECT_THAT(chief, ::testing::ContainsRegex("/job:ps/replica:0/task:0/device:CPU:0: [^\n]* VariableV2"));
  EXPECT_THAT(chief, HasSubstr("serves grpc://" + EmulatedHosts::Address(2, kPort)));
  EXPECT_GT(TestAccuracy(chief), 0.3) << chief;
  EXPECT_EQ(TestAccuracy(chief), TestAccuracy(printed[0])) << chief << printed[0];
}

// Two servers on hosts 1 and 2 and a client on host 1 whose graph makes a 64 MiB tensor on
// host 2 and sums it on host 1.
class TwoHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!hosts_.skip_reason().empty()) GTEST_SKIP() << hosts_.skip_reason();
    for (int h : {1, 2}) {
      servers_.push_back(std::make_unique<Child>(
          std::vector<std::string>{"server", "--cluster", Workers(2), "--job", "worker", "--task", std::to_string(h - 1)},
          "", hosts_.Enter(h)));
      ASSERT_THAT(servers_.back()->ReadUntil("Started server", std::chrono::seconds(20)), HasSubstr("Started server"));
    }
    graph_ = StrCat(::testing::TempDir(), "/emulated_hosts_graph_", getpid(), ".json");
    std::ofstream(graph_) << R"({"nodes": [
      {"name": "v", "op": "Placeholder", "device": "/job:worker/task:1", "attrs": {"dtype": "float32", "shape": []}},
      {"name": "dims", "op": "Const", "device": "/job:worker/task:1",
       "attrs": {"dtype": "int32", "value": {"dtype": "int32", "shape": [1], "data": [16777216]}}},
      {"name": "x", "op": "Fill", "inputs": ["dims", "v"], "device": "/job:worker/task:1"},
      {"name": "axes", "op": "Const", "device": "/job:worker/task:0",
       "attrs": {"dtype": "int32", "value": {"dtype": "int32", "shape": [1], "data": [0]}}},
      {"name": "s", "op": "Sum", "inputs": ["x", "axes"], "device": "/job:worker/task:0"}]})";
    config_ = StrCat(::testing::TempDir(), "/emulated_hosts_config_", getpid(), ".json");
    std::ofstream(config_) << R"({"operation_timeout_in_ms": 5000})";
  }
  void TearDown() override {
    std::remove(graph_.c_str());
    std::remove(config_.c_str());
  }

  // The client's step from host 1: its output and exit status, and how long it took.
  std::pair<std::string, int> Step(double* seconds = nullptr) {
    const auto start = std::chrono::steady_clock::now();
    auto result = testing::RunCommand(hosts_.Exec(
        1, StrCat(TESSERA_CLI, " run ", graph_, " --config ", config_, " --master grpc://",
                  EmulatedHosts::Address(1, kPort), " --fetch s --feed 'v={\"dtype\": \"float32\", \"shape\": [], ",
                  "\"data\": [0.5]}'")));
    if (seconds != nullptr) {
      *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return result;
  }

  EmulatedHosts hosts_{2};
  std::vector<std::unique_ptr<Child>> servers_;
  std::string graph_, config_;
};

constexpr char kSum[] = R"({"s":{"data":[8388608.0])";

// The first step's tensor takes gRPC while the direct connection is made beside it; a later
// one comes over that connection's TCP, to the port host 2's GetStatus named (gRPC's
// connections all have port 2222 at one end).
TEST_F(TwoHostsTest, A64MiBTensorCrossesTheLink) {
  const auto direct_bytes = [&] {
    const auto [sockets, status] = testing::RunCommand(hosts_.Exec(
        1, StrCat("ss -Htni state established '( dst ", EmulatedHosts::Ip(2), " and not dport = :", kPort,
                  " and not sport = :", kPort, " )'")));
    const size_t at = sockets.find("bytes_received:");
    return status != 0 || at == std::string::npos ? int64_t{0} : std::atoll(sockets.c_str() + at + 15);
  };
  // A few steps at most: the connection is made within a second of the first.
  for (int step = 0; step < 4 && direct_bytes() < (int64_t{64} << 20); ++step) {
    const auto [out, status] = Step();
    ASSERT_EQ(status, 0) << out;
    EXPECT_THAT(out, HasSubstr(kSum));
  }
  EXPECT_GE(direct_bytes(), int64_t{64} << 20) << "no direct connection brought the tensor";
}

TEST_F(TwoHostsTest, AKilledTaskFailsTheStepWithinItsTimeoutNamingIt) {
  ASSERT_EQ(Step().second, 0);
  kill(servers_[1]->pid(), SIGKILL);
  double seconds = 0;
  const auto [out, status] = Step(&seconds);
  EXPECT_NE(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("/job:worker/replica:0/task:1"));
  EXPECT_LT(seconds, 15) << out;
}

TEST_F(TwoHostsTest, ALinkTakenDownFailsTheStepAndBroughtBackWorks) {
  ASSERT_TRUE(hosts_.Link(2, false));
  double seconds = 0;
  const auto [out, status] = Step(&seconds);
  EXPECT_NE(status, 0) << out;
  EXPECT_THAT(out, HasSubstr("task:1"));
  EXPECT_LT(seconds, 15) << out;
  ASSERT_TRUE(hosts_.Link(2, true));
  const auto [again, ok] = Step();
  EXPECT_EQ(ok, 0) << again;
  EXPECT_THAT(again, HasSubstr(kSum));
}

TEST_F(TwoHostsTest, LossOnEveryLink) {
  const std::string why_not = hosts_.Netem("2ms", "1%");
  if (!why_not.empty()) GTEST_SKIP() << why_not;
  const auto [out, status] = Step();
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr(kSum));
}

}  // namespace
}  // namespace tessera
