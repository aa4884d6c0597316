// The master's side of a step, through fake workers (WorkerInterface): what each task is
// handed, how fetches come back, and how one task's error ends the step on the others.
// The real workers, in-process and over gRPC, are cluster_session_test's.
#include "distributed/master_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <thread>

#include "distributed/cluster_spec.h"
#include "graph/builder/ops.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What a fake worker does with a step.
enum class Behaviour { kAnswer, kFail, kCancelled, kWaitForCancel };

// What a worker was told to forget, kept by the test: it outlives the session's workers.
struct Log {
  std::mutex mu;
  std::vector<std::string> lines;  // guarded by mu
  void Add(std::string line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(std::move(line));
  }
  std::vector<std::string> Lines() {
    std::lock_guard<std::mutex> lock(mu);
    return lines;
  }
};

class FakeWorker final : public WorkerInterface {
 public:
  FakeWorker(std::string job, Behaviour behaviour, float base, std::shared_ptr<Log> log)
      : WorkerInterface(TaskName(job, 0)),
        device_(StrCat(task(), "/device:CPU:0")),
        behaviour_(behaviour),
        base_(base),
        log_(std::move(log)) {}
  ~FakeWorker() override {
    if (answerer_.joinable()) answerer_.join();
  }

  StatusOr<std::vector<RemoteDevice>> GetDevices(std::chrono::milliseconds) override {
    return std::vector<RemoteDevice>{{device_, "CPU", 0, "fake", 1}};
  }

  StatusOr<std::string> RegisterGraph(std::vector<std::pair<std::string, std::unique_ptr<Graph>>> parts,
                                      std::chrono::milliseconds timeout) override {
    std::lock_guard<std::mutex> lock(mu_);
    register_timeouts_.push_back(timeout);
    for (const auto& [device, graph] : parts) {
      devices_.push_back(device);
      for (const Node* n : graph->nodes()) {
        int64_t index = 0;
        if (n->op() == "_Retval" && n->GetAttr("index", &index).ok()) retvals_.push_back(static_cast<int>(index));
      }
    }
    return StrCat(task(), "/graph");
  }
  void DeregisterGraph(const std::string& handle) override { log_->Add("deregister " + handle); }

  class Call final : public RunGraphCall {
   public:
    explicit Call(FakeWorker* w) : w_(w) {}
    void Cancel() override {
      std::lock_guard<std::mutex> lock(w_->mu_);
      w_->cancelled_ = true;
      w_->cv_.notify_all();
    }
   private:
    FakeWorker* const w_;
  };

  std::unique_ptr<RunGraphCall> RunGraphAsync(RunGraphRequest request, RunGraphDone done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      args_ = request.args;
      step_ids_.push_back(request.step_id);
    }
    switch (behaviour_) {
      case Behaviour::kAnswer: {
        std::map<int, Tensor> retvals;
        for (int index : retvals_) retvals[index] = Tensor::Scalar(base_ + static_cast<float>(index));
        done(Status::OK(), std::move(retvals));
        break;
      }
      case Behaviour::kCancelled:
        done(errors::Cancelled("Step was cancelled"), {});
        break;
      case Behaviour::kFail:
        // From another thread, a little later: the others are in flight by then.
        answerer_ = std::thread([done] {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          done(errors::Internal("boom"), {});
        });
        break;
      case Behaviour::kWaitForCancel:
        answerer_ = std::thread([this, done] {
          std::unique_lock<std::mutex> lock(mu_);
          const bool cancelled = cv_.wait_for(lock, std::chrono::seconds(20), [this] { return cancelled_; });
          lock.unlock();
          done(cancelled ? errors::Cancelled("Step was cancelled") : errors::DeadlineExceeded("never cancelled"), {});
        });
        break;
    }
    return std::make_unique<Call>(this);
  }

  void DeferCleanup(int64_t step_id) override { log_->Add(StrCat("defer ", step_id)); }
  void CleanupSteps(std::vector<int64_t> step_ids) override {
    for (int64_t id : step_ids) log_->Add(StrCat("cleanup ", id));
  }
  Status ResetContainers(const std::vector<std::string>&) override { return Status::OK(); }

  std::vector<std::string> devices() {
    std::lock_guard<std::mutex> lock(mu_);
    return devices_;
  }
  std::map<int, Tensor> args() {
    std::lock_guard<std::mutex> lock(mu_);
    return args_;
  }
  std::vector<std::chrono::milliseconds> register_timeouts() {
    std::lock_guard<std::mutex> lock(mu_);
    return register_timeouts_;
  }
  int64_t step_id() {
    std::lock_guard<std::mutex> lock(mu_);
    return step_ids_.empty() ? -1 : step_ids_.back();
  }
  bool cancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }

 private:
  const std::string device_;
  const Behaviour behaviour_;
  const float base_;
  const std::shared_ptr<Log> log_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> devices_;  // guarded by mu_
  std::vector<int> retvals_;          // guarded by mu_
  std::map<int, Tensor> args_;        // guarded by mu_
  std::vector<int64_t> step_ids_;     // guarded by mu_
  std::vector<std::chrono::milliseconds> register_timeouts_;  // guarded by mu_
  bool cancelled_ = false;            // guarded by mu_
  std::thread answerer_;
};

// x is fed on task a, y = -x computed there, z = -y on task b; both are fetched.
GraphSpec TwoTaskGraph() {
  Scope root = Scope::NewRootScope();
  Scope a = root.WithDevice("/job:a/task:0");
  Scope b = root.WithDevice("/job:b/task:0");
  auto x = ops::Placeholder(a.WithOpName("x"), DataType::kFloat, TensorShape({}));
  auto y = ops::Neg(a.WithOpName("y"), x);
  ops::Neg(b.WithOpName("z"), y);
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  return def;
}

class MasterSessionTest : public ::testing::Test {
 protected:
  std::unique_ptr<MasterSession> Open(Behaviour on_a, Behaviour on_b) {
    auto cluster = ClusterSpec::FromJson(R"({"a": ["127.0.0.1:1"], "b": ["127.0.0.1:2"]})");
    EXPECT_TRUE(cluster.ok()) << cluster.status();
    MasterSession::Environment env;
    env.job = "a";
    env.channels = std::make_shared<WorkerChannels>(*cluster, "");
    env.new_worker = [&, on_a, on_b](const std::string& job, int) -> StatusOr<std::unique_ptr<WorkerInterface>> {
      const bool on_a_task = job == "a";
      auto w = std::make_unique<FakeWorker>(job, on_a_task ? on_a : on_b, on_a_task ? 100.0f : 200.0f,
                                            on_a_task ? a_log_ : b_log_);
      (job == "a" ? a_ : b_) = w.get();
      return std::unique_ptr<WorkerInterface>(std::move(w));
    };
    auto session = MasterSession::Create(env, SessionConfig(), TwoTaskGraph(), std::chrono::milliseconds(1000));
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(*session) : nullptr;
  }
  FakeWorker* a_ = nullptr;
  FakeWorker* b_ = nullptr;
  std::shared_ptr<Log> a_log_ = std::make_shared<Log>();
  std::shared_ptr<Log> b_log_ = std::make_shared<Log>();
};

TEST_F(MasterSessionTest, EachTaskRunsItsOwnPartitionAndFetchesComeBackInTheOrderAsked) {
  auto session = Open(Behaviour::kAnswer, Behaviour::kAnswer);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({}, {{"x", Tensor::Scalar(1.0f)}}, {"z", "y"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_THAT(a_->devices(), ElementsAre("/job:a/replica:0/task:0/device:CPU:0"));
  EXPECT_THAT(b_->devices(), ElementsAre("/job:b/replica:0/task:0/device:CPU:0"));
  // The feed goes to the task that reads it; z (fetch 0) comes from b, y (fetch 1) from a.
  EXPECT_EQ(a_->args().size(), 1u);
  EXPECT_TRUE(b_->args().empty());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data<float>()[0], 200.0f);
  EXPECT_EQ(out[1].data<float>()[0], 101.0f);
  // One step id for both, whose cleanup each worker may defer.
  EXPECT_EQ(a_->step_id(), b_->step_id());
  EXPECT_THAT(a_log_->Lines(), ElementsAre(StrCat("defer ", a_->step_id())));
  EXPECT_THAT(b_log_->Lines(), ElementsAre(StrCat("defer ", b_->step_id())));
}

TEST_F(MasterSessionTest, AnErrorOnOneTaskCancelsTheOthersAndIsWhatTheStepReturns) {
  auto session = Open(Behaviour::kWaitForCancel, Behaviour::kFail);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({}, {{"x", Tensor::Scalar(1.0f)}}, {"z"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInternal) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("boom"));
  EXPECT_TRUE(a_->cancelled());
  // A failed step may have left tensors behind: both forget it at once.
  EXPECT_THAT(a_log_->Lines(), ElementsAre(StrCat("cleanup ", a_->step_id())));
  EXPECT_THAT(b_log_->Lines(), ElementsAre(StrCat("cleanup ", b_->step_id())));
}

TEST_F(MasterSessionTest, ACancelledTaskDoesNotHideTheErrorThatCausedIt) {
  auto session = Open(Behaviour::kCancelled, Behaviour::kFail);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({}, {{"x", Tensor::Scalar(1.0f)}}, {"z"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInternal) << s;
}

TEST_F(MasterSessionTest, AClientThatGoesAwayCancelsTheStepOnEveryTask) {
  auto session = Open(Behaviour::kWaitForCancel, Behaviour::kAnswer);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({}, {{"x", Tensor::Scalar(1.0f)}}, {"z"}, {}, &out, [] { return true; });
  EXPECT_EQ(s.code(), Code::kCancelled) << s;
  EXPECT_TRUE(a_->cancelled());
}

TEST_F(MasterSessionTest, ClosingTheSessionDeregistersEveryTasksGraph) {
  auto session = Open(Behaviour::kAnswer, Behaviour::kAnswer);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {{"x", Tensor::Scalar(1.0f)}}, {"z"}, {}, &out).ok());
  session.reset();
  EXPECT_EQ(a_log_->Lines().back(), "deregister /job:a/replica:0/task:0/graph");
  EXPECT_EQ(b_log_->Lines().back(), "deregister /job:b/replica:0/task:0/graph");
}

// Registering is part of a new step's run: a task that does not answer it must not hold the
// step past the user's deadline.
TEST_F(MasterSessionTest, TheStepsTimeoutBoundsTheRegistrationOfItsGraph) {
  auto session = Open(Behaviour::kAnswer, Behaviour::kAnswer);
  ASSERT_NE(session, nullptr);
  RunOptions options;
  options.timeout_in_ms = 1234;
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run(options, {{"x", Tensor::Scalar(1.0f)}}, {"z"}, {}, &out, nullptr).ok());
  EXPECT_THAT(a_->register_timeouts(), ElementsAre(std::chrono::milliseconds(1234)));
  EXPECT_THAT(b_->register_timeouts(), ElementsAre(std::chrono::milliseconds(1234)));
}

}  // namespace
}  // namespace tessera
