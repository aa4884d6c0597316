// Between-graph training as processes: a ps (`tessera server`) and two workers
// (`tessera train --mode async|sync`), each on its shard. Both learn, both update the one
// copy of the variables on the ps, a worker run again rejoins where the ps is, and a chief
// whose ps lost everything restores the checkpoint. In sync training every update averages
// one step of each worker. Multi-worker training (a tower on every worker, the gradients
// all-reduced across them) equals one process with the same global batch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <regex>
#include <sstream>
#include <thread>

#include "distributed/grpc_session.h"
#include "graph/builder/ops.h"
#include "kernels/collectives/gloo_all_reduce.h"
#include "runtime/session.h"
#include "tests/distributed/free_port.h"
#include "tests/tools/child_process.h"
#include "training/trainer.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Child;
using testing::FreePort;
using testing::LoopbackAddress;

double TestAccuracy(const std::string& printed) {
  std::smatch m;
  if (!std::regex_search(printed, m, std::regex("test accuracy ([0-9.]+)"))) return -1;
  return std::stod(m[1]);
}

class ClusterTrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterGrpcSessionFactory();
    unsetenv("TESSERA_CLUSTER_TOKEN");
    ps_address_ = LoopbackAddress(FreePort());
    cluster_ = StrCat(R"({"ps": [")", ps_address_, R"("], "worker": [")", LoopbackAddress(FreePort()), R"(", ")",
                      LoopbackAddress(FreePort()), R"("]})");
    checkpoint_ = ::testing::TempDir() + "/cluster_train_" + std::to_string(getpid()) + ".ckpt";
    StartPs();
  }
  // The checkpoint is a tensor bundle: an index and one data shard beside the prefix.
  void TearDown() override {
    for (const char* suffix : {".index", ".data-00000-of-00001"}) std::remove((checkpoint_ + suffix).c_str());
  }

  void StartPs() {
    ps_ = std::make_unique<Child>(std::vector<std::string>{"server", "--cluster", cluster_, "--job", "ps", "--task", "0"},
                                  "");
    ASSERT_THAT(ps_->ReadUntil("Started server", std::chrono::seconds(20)), HasSubstr("Started server"));
  }

  std::unique_ptr<Child> Worker(int task, const std::string& mode = "async",
                                const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {"train", "--mode", mode, "--cluster", cluster_, "--job", "worker", "--task",
                                     std::to_string(task),
                                     "--epochs", "1", "--train-limit", "4000", "--test-limit", "500", "--batch", "50",
                                     "--checkpoint", checkpoint_, "--no-progress"};
    args.insert(args.end(), more.begin(), more.end());
    // Its errors too, in what the test reads.
    return std::make_unique<Child>(args, "", [] { dup2(STDOUT_FILENO, STDERR_FILENO); });
  }

  // What a worker printed, once it has exited 0 (it prints far less than a pipe holds).
  static std::string Finish(Child& worker) {
    const int code = worker.Wait(std::chrono::seconds(180));
    const std::string printed = worker.ReadUntil("\x01never printed", std::chrono::seconds(2));
    EXPECT_EQ(code, 0) << printed;
    return printed;
  }

  // The step count the ps keeps: every worker's step adds one.
  int64_t GlobalStep() {
    Scope root = Scope::NewRootScope();
    ops::Variable(root.WithOpName("global_step").WithDevice("/job:ps/task:0"), TensorShape({}), DataType::kInt64);
    GraphSpec def;
    EXPECT_TRUE(root.ToSpec(&def).ok());
    SessionConfig config;
    config.device_filters = {"/job:ps"};
    auto session = Session::Create("grpc://" + ps_address_, config, def);
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return -1;
    std::vector<Tensor> out;
    Status s = (*session)->Run({}, {"global_step"}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? out[0].data<int64_t>()[0] : -1;
  }

  std::string cluster_;
  std::string ps_address_;
  std::string checkpoint_;
  std::unique_ptr<Child> ps_;
};

TEST_F(ClusterTrainTest, AsyncWorkersShareThePsVariablesRejoinAndRestore) {
  auto chief = Worker(0);
  auto other = Worker(1);
  const std::string chief_printed = Finish(*chief);
  const std::string other_printed = Finish(*other);
  // 2,000 images each, 50 a step: 40 steps per worker, all of them on the ps.
  EXPECT_THAT(chief_printed, HasSubstr("trains on images 0..2000"));
  EXPECT_THAT(other_printed, HasSubstr("trains on images 2000..4000"));
  EXPECT_GT(TestAccuracy(chief_printed), 0.6) << chief_printed;
  EXPECT_GT(TestAccuracy(other_printed), 0.6) << other_printed;
  EXPECT_EQ(GlobalStep(), 80);

  // A worker that comes back finds the variables where the ps kept them.
  auto again = Worker(1);
  EXPECT_THAT(Finish(*again), HasSubstr("the ps hold the variables at global step 80"));
  EXPECT_EQ(GlobalStep(), 120);

  // A ps that restarts has lost them: the chief restores its last checkpoint.
  kill(ps_->pid(), SIGKILL);
  ps_->Wait(std::chrono::seconds(10));
  StartPs();
  auto restored = Worker(0);
  const std::string printed = Finish(*restored);
  EXPECT_THAT(printed, HasSubstr("restored " + checkpoint_));
  EXPECT_GT(TestAccuracy(printed), 0.6) << printed;
}

// Each update waits for one gradient from each worker: 40 steps of each make 40 global
// steps, and both workers stop at the same one, on the same variables.
// A chief gone for good in sync training: the others, which wait on its runner every step,
// fail within --chief-timeout naming it, instead of waiting without end.
TEST_F(ClusterTrainTest, SyncWorkersFailNamingADeadChief) {
  auto chief = Worker(0, "sync", {"--train-limit", "40000", "--epochs", "5"});
  auto other = Worker(1, "sync", {"--train-limit", "40000", "--epochs", "5", "--chief-timeout", "3"});
  ASSERT_THAT(other->ReadUntil("trains on images", std::chrono::seconds(60)), HasSubstr("trains on images"));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a few steps in
  kill(chief->pid(), SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  const int code = other->Wait(std::chrono::seconds(60));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  const std::string printed = other->ReadUntil("\x01never printed", std::chrono::seconds(2));
  EXPECT_NE(code, 0) << printed;
  EXPECT_THAT(printed, HasSubstr("the chief (worker 0, "));
  EXPECT_LT(seconds, 20) << printed;
}

TEST_F(ClusterTrainTest, SyncWorkersAverageEveryStepAndStopTogether) {
  auto chief = Worker(0, "sync");
  auto other = Worker(1, "sync");
  const std::string chief_printed = Finish(*chief);
  const std::string other_printed = Finish(*other);
  EXPECT_EQ(GlobalStep(), 40);
  EXPECT_GT(TestAccuracy(chief_printed), 0.6) << chief_printed;
  EXPECT_EQ(TestAccuracy(chief_printed), TestAccuracy(other_printed)) << chief_printed << other_printed;
}

// The chief runs here, the other workers as processes; five steps of 48 images, the
// gradients all-reduced by `all_reduce` ("auto": the engine's ring on one machine).
void ExpectMultiWorkerEqualsOneProcess(int workers, const std::string& all_reduce = "auto") {
  TrainOptions o;
  o.epochs = 1;
  o.batch = 48;
  o.train_limit = 5 * 48;
  o.test_limit = 200;
  o.progress = false;
  TrainOptions one = o;
  one.devices = workers;
  std::ostringstream log;
  StatusOr<TrainResult> alone = Train(one, log);
  ASSERT_TRUE(alone.ok()) << alone.status();

  std::string cluster = R"({"worker": [)";
  for (int i = 0; i < workers; ++i) cluster += StrCat(i ? ", " : "", "\"", LoopbackAddress(FreePort()), "\"");
  cluster += "]}";
  std::vector<std::unique_ptr<Child>> others;
  for (int i = 1; i < workers; ++i) {
    others.push_back(std::make_unique<Child>(
        std::vector<std::string>{"train", "--mode", "multi-worker", "--cluster", cluster, "--task", std::to_string(i),
                                 "--no-progress"},
        ""));
  }
  TrainOptions multi = o;
  multi.mode = "multi-worker";
  multi.cluster = cluster;
  multi.task = 0;
  multi.all_reduce = all_reduce;
  StatusOr<TrainResult> together = Train(multi, log);
  ASSERT_TRUE(together.ok()) << together.status() << log.str();
  for (auto& other : others) {
    EXPECT_EQ(other->Wait(std::chrono::seconds(60)), 0);
    EXPECT_THAT(other->ReadUntil("\x01never printed", std::chrono::seconds(2)), HasSubstr("the chief is done"));
  }
  ASSERT_EQ(together->variables.size(), alone->variables.size());
  for (const auto& [name, value] : alone->variables) {
    const Tensor& theirs = together->variables.at(name);
    ASSERT_EQ(theirs.NumElements(), value.NumElements()) << name;
    double worst = 0;
    for (int64_t i = 0; i < value.NumElements(); ++i) {
      worst = std::max(worst, std::abs(double(value.data<float>()[i]) - theirs.data<float>()[i]));
    }
    EXPECT_LE(worst, 1e-4) << name << " over " << workers << " workers";
  }
  if (all_reduce == "gloo") {
    // Gloo adds the towers' gradients in another order than one process does.
    EXPECT_NEAR(together->epochs.at(0).mean_loss, alone->epochs.at(0).mean_loss, 1e-5);
  } else {
    EXPECT_EQ(together->epochs.at(0).mean_loss, alone->epochs.at(0).mean_loss);
  }
}

TEST(MultiWorkerTrainTest, TwoWorkersEqualOneProcess) { ExpectMultiWorkerEqualsOneProcess(2); }

TEST(MultiWorkerTrainTest, ThreeWorkersOverGlooEqualOneProcess) {
  if (!GlooAllReduce::Available()) GTEST_SKIP() << "this build has no Gloo";
  ExpectMultiWorkerEqualsOneProcess(3, "gloo");
}

// Both workers as processes under mutual TLS, which also turns the direct transport off:
// the all-reduce ring crosses the tasks over TLS gRPC.
TEST(MultiWorkerTrainTest, TwoWorkersTrainUnderTls) {
  const std::string certs = TESSERA_SOURCE_DIR "/tests/distributed/tls/";
  const std::string cluster =
      StrCat(R"({"worker": [")", LoopbackAddress(FreePort()), R"(", ")", LoopbackAddress(FreePort()), R"("]})");
  auto worker = [&](int task) {
    return std::make_unique<Child>(
        std::vector<std::string>{"train", "--mode", "multi-worker", "--cluster", cluster, "--task", std::to_string(task),
                                 "--epochs", "1", "--batch", "48", "--train-limit", "240", "--test-limit", "200",
                                 "--no-progress", "--tls-cert", certs + "task.pem", "--tls-key", certs + "task.key",
                                 "--tls-ca", certs + "ca.pem"},
        "");
  };
  auto other = worker(1);
  auto chief = worker(0);
  ASSERT_EQ(chief->Wait(std::chrono::seconds(120)), 0) << chief->ReadUntil("\x01never printed", std::chrono::seconds(2));
  EXPECT_GE(TestAccuracy(chief->ReadUntil("\x01never printed", std::chrono::seconds(2))), 0);
  EXPECT_EQ(other->Wait(std::chrono::seconds(60)), 0);
  EXPECT_THAT(other->ReadUntil("\x01never printed", std::chrono::seconds(2)), HasSubstr("the chief is done"));
}
TEST(MultiWorkerTrainTest, ThreeWorkersEqualOneProcess) { ExpectMultiWorkerEqualsOneProcess(3); }

}  // namespace
}  // namespace tessera
