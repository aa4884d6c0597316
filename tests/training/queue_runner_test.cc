#include "training/queue_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "graph/builder/ops.h"
#include "tests/test_ops.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

constexpr DataType kI = DataType::kInt32;

// "enqueue" counts up a counter and puts its value into q (capacity 4); "dequeue" takes one;
// "source_*" is a finite queue that "move" drains into q.
struct Pipeline {
  Scope root = Scope::NewRootScope();
  std::unique_ptr<Session> session;
  Pipeline() {
    auto q = ops::FIFOQueue(root.WithOpName("q"), {kI}, {.shapes = {TensorShape({})}, .capacity = 4});
    auto counter = ops::Variable(root.WithOpName("counter"), TensorShape({}), kI);
    ops::Assign(root.WithOpName("init"), counter, 0);
    ops::QueueEnqueue(root.WithOpName("enqueue"), q, {ops::AssignAdd(root.WithOpName("next"), counter, 1)});
    ops::Identity(root.WithOpName("dequeue"), ops::QueueDequeue(root.WithOpName("dq"), q, {kI})[0]);
    ops::QueueClose(root.WithOpName("close"), q);
    ops::QueueClose(root.WithOpName("cancel"), q, true);
    auto source = ops::FIFOQueue(root.WithOpName("source"), {kI}, {.shapes = {TensorShape({})}});
    auto items = ops::Placeholder(root.WithOpName("items"), kI);
    ops::QueueEnqueueMany(root.WithOpName("source_fill"), source, {items});
    ops::QueueClose(root.WithOpName("source_close"), source);
    ops::QueueEnqueue(root.WithOpName("move"), q, {ops::QueueDequeue(root.WithOpName("take"), source, {kI})[0]});
    session = testing::MakeSession(root);
    std::vector<Tensor> out;
    EXPECT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  }
  StatusOr<int> Dequeue() {
    std::vector<Tensor> out;
    Status s = session->Run({}, {"dequeue"}, {}, &out);
    if (!s.ok()) return s;
    return out[0].flat<int32_t>()[0];
  }
};

TEST(QueueRunnerTest, ThreadsFeedTheQueueUntilTheCoordinatorStops) {
  Pipeline p;
  Coordinator coord;
  QueueRunner runner({.enqueue_ops = {"enqueue", "enqueue"}, .close_op = "close", .cancel_op = "cancel"});
  ASSERT_TRUE(runner.Start(p.session.get(), &coord).ok());
  // The enqueue reads the counter's reference when it runs, so two threads may enqueue
  // the same value (as in TensorFlow 1.x); every value is a count the threads reached.
  int largest = 0;
  for (int i = 0; i < 50; ++i) {
    auto v = p.Dequeue();
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_GE(*v, 1);
    largest = std::max(largest, *v);
  }
  EXPECT_GE(largest, 50);
  EXPECT_TRUE(runner.IsRunning());
  coord.RequestStop();
  // Both threads are blocked on the full queue; the cancel op frees them.
  Status s = coord.Join(std::chrono::seconds(10));
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_FALSE(runner.IsRunning());
}

TEST(QueueRunnerTest, AnExhaustedSourceClosesTheQueueAfterTheLastThread) {
  Pipeline p;
  std::vector<Tensor> out;
  std::vector<int32_t> items(10);
  for (int i = 0; i < 10; ++i) items[i] = i;
  ASSERT_TRUE(p.session->Run({{"items", Tensor::FromVector<int32_t>(items)}}, {}, {"source_fill"}, &out).ok());
  ASSERT_TRUE(p.session->Run({}, {}, {"source_close"}, &out).ok());
  Coordinator coord;
  QueueRunner runner({.enqueue_ops = {"move", "move", "move"}, .close_op = "close", .cancel_op = "cancel"});
  ASSERT_TRUE(runner.Start(p.session.get(), &coord).ok());
  std::set<int> seen;
  while (true) {
    auto v = p.Dequeue();
    if (!v.ok()) {
      EXPECT_EQ(v.status().code(), Code::kOutOfRange) << v.status();
      break;
    }
    seen.insert(*v);
  }
  EXPECT_EQ(seen.size(), 10u);  // every item once, then OutOfRange
  coord.RequestStop();
  EXPECT_TRUE(coord.Join(std::chrono::seconds(10)).ok());
}

TEST(QueueRunnerTest, AnErrorInOneThreadStopsAllAndJoinReturnsIt) {
  testing::RegisterTestOps();
  Pipeline p;
  NodeSpec fail;
  fail.op = "TestFail";
  fail.attrs = {{"message", "reader broke"}};
  ASSERT_NE(p.root.WithOpName("fail").AddNode(fail), nullptr);
  p.session = testing::MakeSession(p.root);
  std::vector<Tensor> out;
  ASSERT_TRUE(p.session->Run({}, {}, {"init"}, &out).ok());
  Coordinator coord;
  QueueRunner runner({.enqueue_ops = {"enqueue", "fail"}, .close_op = "close", .cancel_op = "cancel"});
  ASSERT_TRUE(runner.Start(p.session.get(), &coord).ok());
  Status s = coord.Join(std::chrono::seconds(10));  // the failure requests the stop
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("reader broke"));
  EXPECT_FALSE(runner.IsRunning());
  EXPECT_TRUE(coord.ShouldStop());
}

TEST(QueueRunnerTest, StartTwiceOrWithoutOpsIsAnError) {
  Pipeline p;
  QueueRunner empty({});
  EXPECT_EQ(empty.Start(p.session.get()).code(), Code::kFailedPrecondition);
  QueueRunner runner({.enqueue_ops = {"enqueue"}, .cancel_op = "cancel"});
  ASSERT_TRUE(runner.Start(p.session.get()).ok());
  EXPECT_EQ(runner.Start(p.session.get()).code(), Code::kFailedPrecondition);
  // The destructor cancels and joins the thread blocked on the full queue.
}

class StuckRunner : public Runner {
 public:
  Status Join() override { return Status::OK(); }
  bool IsRunning() const override { return true; }
  std::string Name() const override { return "stuck"; }
};

TEST(CoordinatorTest, FirstErrorWinsAndStuckRunnersAreNamed) {
  Coordinator coord;
  EXPECT_FALSE(coord.WaitForStop(std::chrono::milliseconds(10)));
  coord.ReportStatus(Status::OK());
  EXPECT_FALSE(coord.ShouldStop());
  coord.ReportStatus(errors::Internal("first"));
  coord.ReportStatus(errors::Internal("second"));
  EXPECT_TRUE(coord.ShouldStop());
  EXPECT_EQ(coord.Join().message(), "first");

  Coordinator other;
  StuckRunner stuck;
  other.RegisterRunner(&stuck);
  other.RequestStop();
  Status s = other.Join(std::chrono::milliseconds(20));
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("stuck"));
}

}  // namespace
}  // namespace tessera
