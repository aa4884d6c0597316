// A step's tensors between two tasks of a cluster (two servers in this process, talking
// over loopback gRPC exactly as two processes would): a 64 MiB tensor arrives whole, a
// receive made before the send waits for it, an abort on the sender's side or a sender that
// is not there fails the receive with a reason, and local keys stay local.
#include "distributed/remote_rendezvous.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <thread>

#include "distributed/cluster_server.h"
#include "tests/distributed/free_port.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::FreePort;
using testing::LoopbackAddress;

constexpr char kPsCpu[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorkerCpu[] = "/job:worker/replica:0/task:0/device:CPU:0";

class RemoteRendezvousTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<ClusterSpec> c = ClusterSpec::FromJson(StrCat(R"({"ps": [")", LoopbackAddress(FreePort()),
                                                           R"("], "worker": [")", LoopbackAddress(FreePort()), R"("]})"));
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = *c;
    ClusterServerOptions options;
    options.token = "t0ken";
    auto ps = ClusterServer::Create(cluster_, "ps", 0, options);
    ASSERT_TRUE(ps.ok()) << ps.status();
    ps_ = std::move(*ps);
    auto worker = ClusterServer::Create(cluster_, "worker", 0, options);
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = std::move(*worker);
    channels_ = std::make_shared<WorkerChannels>(cluster_, "t0ken");
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

TEST_F(RemoteRendezvousTest, A64MiBTensorCrossesWhole) {
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

TEST_F(RemoteRendezvousTest, AReceiveBeforeTheSendWaitsForIt) {
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

TEST_F(RemoteRendezvousTest, AnAbortOnTheSendersSideReachesTheReceiver) {
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

TEST_F(RemoteRendezvousTest, ASenderThatIsGoneIsUnavailableNamingItsTask) {
  const int64_t step = NewStepId();
  const std::string key = KeyFromPs("x:0");
  ps_.reset();
  auto r = WorkerSide(step, std::chrono::milliseconds(2000));
  auto [status, value] = Receive(*r, key);
  EXPECT_TRUE(status.code() == Code::kUnavailable || status.code() == Code::kDeadlineExceeded) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("/job:ps/replica:0/task:0 did not answer"));
}

TEST_F(RemoteRendezvousTest, AbortingTheReceiverCancelsItsCallsAndLocalKeysStayLocal) {
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

TEST_F(RemoteRendezvousTest, AWrongTokenIsRefused) {
  const int64_t step = NewStepId();
  auto wrong = std::make_shared<WorkerChannels>(cluster_, "guess");
  RemoteRendezvous r(worker_->local()->rendezvous()->Find(step), "worker", 0, wrong, step, kTimeout);
  auto [status, value] = Receive(r, KeyFromPs("x:0"));
  EXPECT_EQ(status.code(), Code::kUnauthenticated) << status;
}

}  // namespace
}  // namespace tessera
