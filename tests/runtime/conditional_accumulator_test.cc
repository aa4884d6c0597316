// ConditionalAccumulator through sessions: TensorFlow's semantics as SyncReplicasOptimizer
// relies on them (averages, stale gradients dropped, takes that wait and advance the
// global step), with bad inputs and cancellation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Values;

constexpr DataType kF = DataType::kFloat;

// acc: float [2], fed gradients at a fed local step; take of a fed count.
GraphSpec AccumulatorGraph(const std::string& reduction = "MEAN") {
  Scope r = Scope::NewRootScope();
  Output acc = ops::ConditionalAccumulator(r.WithOpName("acc"), kF,
                                           {.shape = TensorShape({2}), .shared_name = "g", .reduction_type = reduction});
  auto grad = ops::Placeholder(r.WithOpName("grad"), kF);
  auto step = ops::Placeholder(r.WithOpName("step"), DataType::kInt64);
  auto n = ops::Placeholder(r.WithOpName("n"), DataType::kInt32);
  ops::AccumulatorApplyGradient(r.WithOpName("apply"), acc, step, grad);
  ops::Identity(r.WithOpName("take"), ops::AccumulatorTakeGradient(r.WithOpName("take_grad"), acc, n, kF));
  ops::Identity(r.WithOpName("count"), ops::AccumulatorNumAccumulated(r.WithOpName("num"), acc));
  ops::AccumulatorSetGlobalStep(r.WithOpName("set_step"), acc, step);
  GraphSpec def;
  EXPECT_TRUE(r.ToSpec(&def).ok()) << r.status();
  return def;
}

class AccumulatorTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(AccumulatorGraph()); }
  void Open(const GraphSpec& def) {
    auto s = Session::Create(SessionConfig(), def);
    ASSERT_TRUE(s.ok()) << s.status();
    session_ = std::move(*s);
  }
  Status Apply(int64_t step, std::vector<float> grad) {
    return session_->Run({{"step", Tensor::Scalar<int64_t>(step)},
                          {"grad", Tensor::FromVector<float>(grad, TensorShape({static_cast<int64_t>(grad.size())}))}},
                         {}, {"apply"}, nullptr);
  }
  StatusOr<std::vector<float>> Take(int n, int64_t timeout_ms = 0) {
    RunOptions options;
    options.timeout_in_ms = timeout_ms;
    std::vector<Tensor> out;
    RETURN_IF_ERROR(session_->Run(options, {{"n", Tensor::Scalar<int32_t>(n)}}, {"take"}, {}, &out, nullptr));
    return Values<float>(out[0]);
  }
  int Count() {
    std::vector<Tensor> out;
    EXPECT_TRUE(session_->Run({}, {"count"}, {}, &out).ok());
    return out.empty() ? -1 : out[0].data<int32_t>()[0];
  }
  std::unique_ptr<Session> session_;
};

TEST_F(AccumulatorTest, TakeAveragesWhatWasAppliedAndEmpties) {
  ASSERT_TRUE(Apply(0, {1, 2}).ok());
  ASSERT_TRUE(Apply(0, {3, 6}).ok());
  EXPECT_EQ(Count(), 2);
  StatusOr<std::vector<float>> avg = Take(2);
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_THAT(*avg, ElementsAre(2, 4));
  EXPECT_EQ(Count(), 0);
}

TEST_F(AccumulatorTest, MoreThanRequiredAreAllAveraged) {
  for (float g : {1.f, 2.f, 6.f}) ASSERT_TRUE(Apply(0, {g, -g}).ok());
  StatusOr<std::vector<float>> avg = Take(2);
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_THAT(*avg, ElementsAre(3, -3));
}

TEST_F(AccumulatorTest, SumReductionDoesNotDivide) {
  Open(AccumulatorGraph("SUM"));
  ASSERT_TRUE(Apply(0, {1, 2}).ok());
  ASSERT_TRUE(Apply(0, {3, 4}).ok());
  StatusOr<std::vector<float>> sum = Take(2);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_THAT(*sum, ElementsAre(4, 6));
}

TEST_F(AccumulatorTest, StaleGradientsAreDroppedAfterATake) {
  ASSERT_TRUE(Apply(0, {1, 1}).ok());
  ASSERT_TRUE(Take(1).ok());  // the accumulator's global step is now 1
  ASSERT_TRUE(Apply(0, {100, 100}).ok()) << "a stale gradient is dropped, not an error";
  EXPECT_EQ(Count(), 0);
  ASSERT_TRUE(Apply(1, {2, 4}).ok());
  ASSERT_TRUE(Apply(5, {4, 8}).ok()) << "a gradient from ahead is taken";
  StatusOr<std::vector<float>> avg = Take(2);
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_THAT(*avg, ElementsAre(3, 6));
}

TEST_F(AccumulatorTest, SetGlobalStepMakesOlderGradientsStale) {
  ASSERT_TRUE(session_->Run({{"step", Tensor::Scalar<int64_t>(7)}}, {}, {"set_step"}, nullptr).ok());
  ASSERT_TRUE(Apply(6, {1, 1}).ok());
  EXPECT_EQ(Count(), 0);
  ASSERT_TRUE(Apply(7, {1, 1}).ok());
  EXPECT_EQ(Count(), 1);
}

TEST_F(AccumulatorTest, TakeWaitsForTheRequiredCount) {
  std::atomic<bool> taken{false};
  StatusOr<std::vector<float>> avg = std::vector<float>();
  std::thread taker([&] {
    avg = Take(3);
    taken = true;
  });
  ASSERT_TRUE(Apply(0, {1, 1}).ok());
  ASSERT_TRUE(Apply(0, {2, 2}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(taken.load()) << "two of three gradients are in";
  ASSERT_TRUE(Apply(0, {6, 6}).ok());
  taker.join();
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_THAT(*avg, ElementsAre(3, 3));
}

TEST_F(AccumulatorTest, AWaitingTakeEndsAtTheDeadlineAndTakesNothing) {
  ASSERT_TRUE(Apply(0, {1, 1}).ok());
  StatusOr<std::vector<float>> avg = Take(2, /*timeout_ms=*/50);
  EXPECT_EQ(avg.status().code(), Code::kDeadlineExceeded) << avg.status();
  EXPECT_EQ(Count(), 1) << "the gradient that was in stays in";
  ASSERT_TRUE(Apply(0, {3, 3}).ok());
  avg = Take(2);
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_THAT(*avg, ElementsAre(2, 2));
}

TEST_F(AccumulatorTest, BadInputsAreErrorsThatLeaveItWorking) {
  Status s = Apply(0, {1, 2, 3});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("ConditionalAccumulator 'g'"));
  EXPECT_THAT(s.message(), HasSubstr("[3]"));
  StatusOr<std::vector<float>> none = Take(0);
  EXPECT_EQ(none.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(none.status().message(), HasSubstr("num_required"));
  ASSERT_TRUE(Apply(0, {1, 2}).ok());
  StatusOr<std::vector<float>> avg = Take(1);
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_THAT(*avg, ElementsAre(1, 2));
}

TEST(AccumulatorSchemaTest, UnsupportedTypesAndReductionsAreRefused) {
  Scope r = Scope::NewRootScope();
  ops::ConditionalAccumulator(r.WithOpName("ints"), DataType::kInt32);
  EXPECT_FALSE(r.ok()) << "int32 is not an accumulator type";

  Scope r2 = Scope::NewRootScope();
  ops::ConditionalAccumulator(r2.WithOpName("acc"), kF, {.reduction_type = "MAX"});
  GraphSpec def;
  ASSERT_TRUE(r2.ToSpec(&def).ok()) << r2.status();
  auto session = Session::Create(SessionConfig(), def);
  Status s = session.ok() ? (*session)->Run({}, {"acc"}, {}, nullptr) : session.status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("reduction_type"));
}

TEST(AccumulatorSchemaTest, ASharedNameWithAnotherShapeIsRefused) {
  Scope r = Scope::NewRootScope();
  ops::ConditionalAccumulator(r.WithOpName("a"), kF, {.shape = TensorShape({2}), .shared_name = "g"});
  ops::ConditionalAccumulator(r.WithOpName("b"), kF, {.shape = TensorShape({3}), .shared_name = "g"});
  GraphSpec def;
  ASSERT_TRUE(r.ToSpec(&def).ok()) << r.status();
  auto session = Session::Create(SessionConfig(), def);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Run({}, {"a"}, {}, nullptr).ok());
  Status s = (*session)->Run({}, {"b"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("Shared ConditionalAccumulator 'g'"));
}

}  // namespace
}  // namespace tessera
