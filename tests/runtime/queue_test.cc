// Queues through sessions: TensorFlow 1.x's FIFOQueue, PaddingFIFOQueue and
// RandomShuffleQueue semantics, blocking without threads, close, cancel, deadlines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "graph/builder/ops.h"
#include "kernels/op_kernel.h"
#include "runtime/server.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Values;

constexpr DataType kF = DataType::kFloat;

struct QueueGraph {
  Scope root = Scope::NewRootScope();
  Output q;
  GraphSpec def() const {
    GraphSpec d;
    EXPECT_TRUE(root.ToSpec(&d).ok()) << root.status();
    return d;
  }
};

// q: capacity 3 of float [2]; x: a fed [2] element; xs: a fed batch.
QueueGraph Fifo(int capacity = 3) {
  QueueGraph g;
  Scope& r = g.root;
  g.q = ops::FIFOQueue(r.WithOpName("q"), {kF}, {.shapes = {TensorShape({2})}, .capacity = capacity});
  auto x = ops::Placeholder(r.WithOpName("x"), kF);
  auto xs = ops::Placeholder(r.WithOpName("xs"), kF);
  auto n = ops::Placeholder(r.WithOpName("n"), DataType::kInt32);
  ops::QueueEnqueue(r.WithOpName("enqueue"), g.q, {x});
  ops::QueueEnqueueMany(r.WithOpName("enqueue_many"), g.q, {xs});
  ops::Identity(r.WithOpName("dequeue"), ops::QueueDequeue(r.WithOpName("dq"), g.q, {kF})[0]);
  ops::Identity(r.WithOpName("dequeue_many"), ops::QueueDequeueMany(r.WithOpName("dqm"), g.q, n, {kF})[0]);
  ops::Identity(r.WithOpName("dequeue_up_to"), ops::QueueDequeueUpTo(r.WithOpName("dqu"), g.q, n, {kF})[0]);
  ops::QueueClose(r.WithOpName("close"), g.q);
  ops::QueueClose(r.WithOpName("close_cancel"), g.q, true);
  ops::Identity(r.WithOpName("size"), ops::QueueSize(r.WithOpName("qs"), g.q));
  return g;
}

Tensor Pair(float a, float b) { return Tensor::FromVector<float>({a, b}); }
Tensor Rows(std::vector<float> v) { return Tensor::FromVector<float>(v, TensorShape({static_cast<int64_t>(v.size() / 2), 2})); }

class QueueTest : public ::testing::Test {
 protected:
  void Open(const QueueGraph& g, SessionConfig config = {}) {
    auto s = Session::Create(config, g.def());
    ASSERT_TRUE(s.ok()) << s.status();
    session_ = std::move(*s);
  }
  Status Run(std::vector<std::pair<std::string, Tensor>> feeds, std::vector<std::string> fetches,
             std::vector<std::string> targets, RunOptions options = {}) {
    RunMetadata md;
    return session_->Run(options, feeds, fetches, targets, &out_, &md);
  }
  int Size() {
    EXPECT_TRUE(Run({}, {"size"}, {}).ok());
    return out_[0].flat<int32_t>()[0];
  }
  std::unique_ptr<Session> session_;
  std::vector<Tensor> out_;
};

TEST_F(QueueTest, FifoOrderAndBatches) {
  Open(Fifo(10));
  ASSERT_TRUE(Run({{"x", Pair(1, 2)}}, {}, {"enqueue"}).ok());
  ASSERT_TRUE(Run({{"xs", Rows({3, 4, 5, 6, 7, 8})}}, {}, {"enqueue_many"}).ok());
  EXPECT_EQ(Size(), 4);
  ASSERT_TRUE(Run({}, {"dequeue"}, {}).ok());
  EXPECT_EQ(Values<float>(out_[0]), (std::vector<float>{1, 2}));
  ASSERT_TRUE(Run({{"n", Tensor::Scalar<int32_t>(2)}}, {"dequeue_many"}, {}).ok());
  EXPECT_EQ(out_[0].shape(), TensorShape({2, 2}));
  EXPECT_EQ(Values<float>(out_[0]), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(Size(), 1);
}

TEST_F(QueueTest, BadElementsAreInvalidArgumentAndTheQueueStaysUsable) {
  Open(Fifo());
  Status s = Run({{"x", Tensor::FromVector<float>({1, 2, 3})}}, {}, {"enqueue"});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("Shape mismatch in tuple component 0. Expected [2], got [3]"));
  EXPECT_THAT(s.message(), HasSubstr("[[node enqueue (QueueEnqueue)"));
  s = Run({{"xs", Tensor::FromVector<float>({1, 2, 3}, TensorShape({1, 3}))}}, {}, {"enqueue_many"});
  EXPECT_THAT(s.message(), HasSubstr("(row 0 of the batch)"));
  ASSERT_TRUE(Run({{"x", Pair(1, 2)}}, {}, {"enqueue"}).ok());
  EXPECT_EQ(Size(), 1);
}

TEST_F(QueueTest, EnqueueAfterCloseIsCancelledAndDequeueFromClosedIsOutOfRange) {
  Open(Fifo());
  ASSERT_TRUE(Run({{"xs", Rows({1, 2, 3, 4})}}, {}, {"enqueue_many"}).ok());
  ASSERT_TRUE(Run({}, {}, {"close"}).ok());
  Status s = Run({{"x", Pair(1, 2)}}, {}, {"enqueue"});
  EXPECT_EQ(s.code(), Code::kCancelled) << s;
  EXPECT_THAT(s.message(), HasSubstr("FIFOQueue 'q' is closed."));
  // Too few for a batch of 3: OutOfRange, and the two elements stay.
  s = Run({{"n", Tensor::Scalar<int32_t>(3)}}, {"dequeue_many"}, {});
  EXPECT_EQ(s.code(), Code::kOutOfRange) << s;
  EXPECT_THAT(s.message(), HasSubstr("FIFOQueue 'q' is closed and has insufficient elements (requested 3, current size 2)"));
  EXPECT_EQ(Size(), 2);
  // Up to 3: the two that are left, then OutOfRange.
  ASSERT_TRUE(Run({{"n", Tensor::Scalar<int32_t>(3)}}, {"dequeue_up_to"}, {}).ok());
  EXPECT_EQ(out_[0].shape(), TensorShape({2, 2}));
  s = Run({{"n", Tensor::Scalar<int32_t>(3)}}, {"dequeue_up_to"}, {});
  EXPECT_EQ(s.code(), Code::kOutOfRange) << s;
  s = Run({}, {"dequeue"}, {});
  EXPECT_THAT(s.message(), HasSubstr("(requested 1, current size 0)"));
}

TEST_F(QueueTest, ABlockedDequeueTimesOutAndLeavesTheContentsIntact) {
  SessionConfig config;
  config.operation_timeout_in_ms = 100;
  Open(Fifo(), config);
  ASSERT_TRUE(Run({{"xs", Rows({1, 2, 3, 4})}}, {}, {"enqueue_many"}).ok());
  Status s = Run({{"n", Tensor::Scalar<int32_t>(3)}}, {"dequeue_many"}, {});
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  EXPECT_EQ(Size(), 2);  // unlike TensorFlow 1.x, which loses what the batch had taken
  // A full queue: the enqueue times out, the contents stay.
  ASSERT_TRUE(Run({{"x", Pair(5, 6)}}, {}, {"enqueue"}).ok());
  s = Run({{"x", Pair(7, 8)}}, {}, {"enqueue"});
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  EXPECT_EQ(Size(), 3);
  ASSERT_TRUE(Run({{"n", Tensor::Scalar<int32_t>(3)}}, {"dequeue_many"}, {}).ok());
  EXPECT_EQ(Values<float>(out_[0]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(QueueTest, BlockedDequeuesHoldNoThread) {
  // One step whose cheap nodes all run on the calling thread. The executor runs the
  // queue's last consumers first, so the four dequeues start (and wait on the empty queue)
  // before the Identity that leads to the enqueue. A dequeue that blocked its thread would
  // leave none for the enqueue, and the step would hit its deadline.
  QueueGraph g;
  auto q = ops::FIFOQueue(g.root.WithOpName("q"), {kF}, {.shapes = {TensorShape({2})}});
  auto handle = ops::Identity(g.root.WithOpName("handle"), q);
  std::vector<std::string> fetches;
  for (int i = 0; i < 4; ++i) fetches.push_back(ops::QueueDequeue(g.root.WithOpName(StrCat("d", i)), q, {kF})[0].name());
  auto xs = ops::Placeholder(g.root.WithOpName("xs"), kF);
  ops::QueueEnqueueMany(g.root.WithOpName("fill"), handle, {xs});
  SessionConfig config;
  config.inter_op_parallelism_threads = 1;
  config.use_per_session_threads = true;
  config.operation_timeout_in_ms = 10000;
  config.arithmetic_optimization = false;  // which would drop the Identity this order rests on
  Open(g, config);
  RunOptions trace;
  trace.trace_level = RunOptions::TraceLevel::kFullTrace;
  RunMetadata md;
  Status s = session_->Run(trace, {{"xs", Rows({1, 2, 3, 4, 5, 6, 7, 8})}}, fetches, {"fill"}, &out_, &md);
  ASSERT_TRUE(s.ok()) << s;
  // The premise: every dequeue started before the enqueue did.
  std::map<std::string, NodeExecStats> by_node;
  for (const NodeExecStats& n : md.step_stats) by_node[n.node] = n;
  for (int i = 0; i < 4; ++i) EXPECT_LE(by_node[StrCat("d", i)].start_us, by_node["fill"].start_us);
  std::set<float> firsts;
  for (const Tensor& t : out_) firsts.insert(t.flat<float>()[0]);
  EXPECT_EQ(firsts, (std::set<float>{1, 3, 5, 7}));
}

TEST_F(QueueTest, CloseWakesEveryWaiter) {
  Open(Fifo());
  std::vector<std::thread> consumers;
  std::vector<Status> results(4);
  std::vector<std::vector<Tensor>> outs(4);
  for (int i = 0; i < 4; ++i) {
    consumers.emplace_back([&, i] { results[i] = session_->Run({}, {"dequeue"}, {}, &outs[i]); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(Run({{"xs", Rows({1, 2, 3, 4})}}, {}, {"enqueue_many"}).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(Run({}, {}, {"close"}).ok());
  for (auto& t : consumers) t.join();
  int ok = 0, out_of_range = 0;
  std::set<float> firsts;
  for (int i = 0; i < 4; ++i) {
    if (results[i].ok()) {
      ++ok;
      firsts.insert(outs[i][0].flat<float>()[0]);
    }
    out_of_range += results[i].code() == Code::kOutOfRange;
  }
  EXPECT_EQ(ok, 2);
  EXPECT_EQ(out_of_range, 2);
  EXPECT_EQ(firsts, (std::set<float>{1, 3}));
}

TEST_F(QueueTest, PendingEnqueuesFinishAfterCloseUnlessCancelled) {
  Open(Fifo(1));
  ASSERT_TRUE(Run({{"x", Pair(1, 2)}}, {}, {"enqueue"}).ok());
  Status pending;
  std::thread producer([&] {
    std::vector<Tensor> o;
    pending = session_->Run({{"x", Pair(3, 4)}}, {}, {"enqueue"}, &o);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(Run({}, {}, {"close"}).ok());
  ASSERT_TRUE(Run({}, {"dequeue"}, {}).ok());  // makes room: the pending enqueue lands
  producer.join();
  EXPECT_TRUE(pending.ok()) << pending;
  ASSERT_TRUE(Run({}, {"dequeue"}, {}).ok());
  EXPECT_EQ(Values<float>(out_[0]), (std::vector<float>{3, 4}));

  Open(Fifo(1));
  ASSERT_TRUE(Run({{"x", Pair(1, 2)}}, {}, {"enqueue"}).ok());
  std::thread cancelled([&] {
    std::vector<Tensor> o;
    pending = session_->Run({{"x", Pair(3, 4)}}, {}, {"enqueue"}, &o);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(Run({}, {}, {"close_cancel"}).ok());
  cancelled.join();
  EXPECT_EQ(pending.code(), Code::kCancelled) << pending;
  EXPECT_EQ(Size(), 1);
}

TEST_F(QueueTest, AnEnqueueRefusedByAClosedQueueCancelsNothingElse) {
  // The first attempt on the queue stays pending across the close; a later enqueue
  // refused as closed fails its own step, whose cancellation must not reach it.
  Open(Fifo(1));
  Status pending;
  std::thread producer([&] {
    std::vector<Tensor> o;
    pending = session_->Run({{"xs", Rows({1, 2, 3, 4})}}, {}, {"enqueue_many"}, &o);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(Run({}, {}, {"close"}).ok());
  EXPECT_EQ(Run({{"x", Pair(5, 6)}}, {}, {"enqueue"}).code(), Code::kCancelled);
  ASSERT_TRUE(Run({}, {"dequeue"}, {}).ok());  // room for the pending second row
  producer.join();
  EXPECT_TRUE(pending.ok()) << pending;
  ASSERT_TRUE(Run({}, {"dequeue"}, {}).ok());
  EXPECT_EQ(Values<float>(out_[0]), (std::vector<float>{3, 4}));
}

TEST_F(QueueTest, ADequeueOfOtherComponentTypesTakesNothing) {
  QueueGraph g = Fifo();
  ops::QueueDequeue(g.root.WithOpName("wrong"), g.q, {DataType::kInt32});
  Open(g);
  ASSERT_TRUE(Run({{"x", Pair(1, 2)}}, {}, {"enqueue"}).ok());
  Status s = Run({}, {"wrong"}, {});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("Dequeue of components (int32) from FIFOQueue 'q'"));
  EXPECT_EQ(Size(), 1);
}

TEST_F(QueueTest, PaddingQueuePadsDynamicDimensionsWithZeros) {
  QueueGraph g;
  auto q = ops::PaddingFIFOQueue(g.root.WithOpName("q"), {kF, DataType::kInt32},
                                 {.shapes = {TensorShape({-1}), TensorShape({})}});
  auto x = ops::Placeholder(g.root.WithOpName("x"), kF);
  auto label = ops::Placeholder(g.root.WithOpName("label"), DataType::kInt32);
  ops::QueueEnqueue(g.root.WithOpName("enqueue"), q, {x, label});
  auto batch = ops::QueueDequeueMany(g.root.WithOpName("batch"), q, 3, {kF, DataType::kInt32});
  Open(g);
  for (auto [v, l] : std::vector<std::pair<std::vector<float>, int>>{{{1}, 10}, {{2, 3, 4}, 20}, {{5, 6}, 30}}) {
    ASSERT_TRUE(Run({{"x", Tensor::FromVector<float>(v)}, {"label", Tensor::Scalar<int32_t>(l)}}, {}, {"enqueue"}).ok());
  }
  ASSERT_TRUE(Run({}, {batch[0].name(), batch[1].name()}, {}).ok());
  EXPECT_EQ(out_[0].shape(), TensorShape({3, 3}));
  EXPECT_EQ(Values<float>(out_[0]), (std::vector<float>{1, 0, 0, 2, 3, 4, 5, 6, 0}));
  EXPECT_EQ(Values<int32_t>(out_[1]), (std::vector<int32_t>{10, 20, 30}));
}

TEST_F(QueueTest, RandomShuffleWithASeedIsADeterministicPermutationAndKeepsMinAfterDequeue) {
  auto order = [&](int64_t seed) {
    QueueGraph g;
    auto q = ops::RandomShuffleQueue(g.root.WithOpName("q"), {DataType::kInt32},
                                     {.shapes = {TensorShape({})}, .min_after_dequeue = 3, .seed = seed});
    auto xs = ops::Placeholder(g.root.WithOpName("xs"), DataType::kInt32);
    ops::QueueEnqueueMany(g.root.WithOpName("fill"), q, {xs});
    ops::QueueClose(g.root.WithOpName("close"), q);
    auto d = ops::QueueDequeueUpTo(g.root.WithOpName("d"), q, 20, {DataType::kInt32});
    ops::Identity(g.root.WithOpName("size"), ops::QueueSize(g.root.WithOpName("qs"), q));
    auto one = ops::QueueDequeue(g.root.WithOpName("one"), q, {DataType::kInt32});
    Open(g);
    std::vector<int32_t> all(20);
    for (int i = 0; i < 20; ++i) all[i] = i;
    EXPECT_TRUE(Run({{"xs", Tensor::FromVector<int32_t>(all)}}, {}, {"fill"}).ok());
    // Open: dequeues leave min_after_dequeue behind.
    RunOptions quick;
    quick.timeout_in_ms = 50;
    std::vector<int32_t> got;
    for (int i = 0; i < 17; ++i) {
      EXPECT_TRUE(Run({}, {one[0].name()}, {}).ok());
      got.push_back(out_[0].flat<int32_t>()[0]);
    }
    EXPECT_EQ(Run({}, {one[0].name()}, {}, quick).code(), Code::kDeadlineExceeded);
    EXPECT_EQ(Size(), 3);
    EXPECT_TRUE(Run({}, {}, {"close"}).ok());
    EXPECT_TRUE(Run({}, {d[0].name()}, {}).ok());
    for (int32_t v : Values<int32_t>(out_[0])) got.push_back(v);
    return got;
  };
  std::vector<int32_t> a = order(7), b = order(7), c = order(8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<int32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int32_t> all(20);
  for (int i = 0; i < 20; ++i) all[i] = i;
  EXPECT_EQ(sorted, all);
}

TEST(QueueSharingTest, SessionsOnOneServerShareAQueueAndPlainSessionsDoNot) {
  QueueGraph g = Fifo(10);
  auto server = Server::CreateLocal();
  auto a = Session::Create((*server)->target(), {}, g.def());
  auto b = Session::Create((*server)->target(), {}, g.def());
  std::vector<Tensor> out;
  ASSERT_TRUE((*a)->Run({{"x", Pair(1, 2)}}, {}, {"enqueue"}, &out).ok());
  ASSERT_TRUE((*b)->Run({}, {"dequeue"}, {}, &out).ok());
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{1, 2}));

  auto c = Session::Create({}, g.def());
  auto d = Session::Create({}, g.def());
  ASSERT_TRUE((*c)->Run({{"x", Pair(1, 2)}}, {}, {"enqueue"}, &out).ok());
  ASSERT_TRUE((*d)->Run({}, {"size"}, {}, &out).ok());
  EXPECT_EQ(out[0].flat<int32_t>()[0], 0);
}

TEST(QueueSharingTest, ASecondQueueWithTheSameSharedNameMustMatch) {
  Scope root = Scope::NewRootScope();
  auto q1 = ops::FIFOQueue(root.WithOpName("q1"), {kF}, {.capacity = 5, .shared_name = "shared"});
  auto q2 = ops::FIFOQueue(root.WithOpName("q2"), {kF}, {.capacity = 3, .shared_name = "shared"});
  auto q3 = ops::FIFOQueue(root.WithOpName("q3"), {DataType::kInt32}, {.capacity = 5, .shared_name = "shared"});
  auto q4 = ops::FIFOQueue(root.WithOpName("q4"), {kF}, {.capacity = 5, .shared_name = "shared"});
  auto session = testing::MakeSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {q1.name()}, {}, &out).ok());
  EXPECT_EQ(out[0].data<std::string>()[1], "shared");
  Status s = session->Run({}, {q2.name()}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Shared queue 'shared' has capacity 5 but requested capacity was 3"));
  s = session->Run({}, {q3.name()}, {}, &out);
  EXPECT_THAT(s.message(), HasSubstr("has component types float32 but requested component types were int32"));
  EXPECT_TRUE(session->Run({}, {q4.name()}, {}, &out).ok());
}

TEST(QueueSharingTest, AnotherKindOfQueueOrAWrongComponentTypeIsAnError) {
  Scope root = Scope::NewRootScope();
  auto fifo = ops::FIFOQueue(root.WithOpName("fifo"), {kF}, {.shared_name = "shared"});
  auto shuffle = ops::RandomShuffleQueue(root.WithOpName("shuffle"), {kF}, {.shared_name = "shared"});
  ops::QueueEnqueue(root.WithOpName("wrong_type"), fifo, {Tensor::Scalar<int32_t>(1)});
  ops::QueueEnqueue(root.WithOpName("right_type"), fifo, {Tensor::Scalar(1.0f)});
  auto session = testing::MakeSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {fifo.name()}, {}, &out).ok());
  Status s = session->Run({}, {shuffle.name()}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Shared queue 'shared' is a FIFOQueue"));
  s = session->Run({}, {}, {"wrong_type"}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Type mismatch in tuple component 0. Expected float32, got int32"));
  EXPECT_TRUE(session->Run({}, {}, {"right_type"}, &out).ok());  // the queue stays usable
}

TEST(QueueSharingTest, MalformedQueuesAreRejectedWhenTheStepIsBuilt) {
  Scope root = Scope::NewRootScope();
  auto q = ops::FIFOQueue(root.WithOpName("q"), {kF}, {.shapes = {TensorShape({-1})}});
  auto session = testing::MakeSession(root);
  std::vector<Tensor> out;
  Status s = session->Run({}, {q.name()}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("only a PaddingFIFOQueue takes unknown dimensions"));
}

TEST(QueueThreadsTest, ProducersAndConsumersOnManyThreadsMoveEveryElementOnce) {
  QueueGraph g = Fifo(4);
  auto session = Session::Create({}, g.def());
  ASSERT_TRUE(session.ok());
  constexpr int kPerProducer = 200;
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < 2; ++p) {
    threads.emplace_back([&, p] {
      std::vector<Tensor> o;
      for (int i = 0; i < kPerProducer; ++i) {
        ASSERT_TRUE((*session)->Run({{"x", Pair(static_cast<float>(p * kPerProducer + i), 0)}}, {}, {"enqueue"}, &o).ok());
      }
    });
  }
  for (int c = 0; c < 2; ++c) {
    threads.emplace_back([&] {
      std::vector<Tensor> o;
      for (int i = 0; i < kPerProducer; ++i) {
        ASSERT_TRUE((*session)->Run({}, {"dequeue"}, {}, &o).ok());
        sum += static_cast<int64_t>(o[0].flat<float>()[0]);
      }
    });
  }
  for (auto& t : threads) t.join();
  const int64_t n = 2 * kPerProducer;
  EXPECT_EQ(sum.load(), n * (n - 1) / 2);
}

TEST_F(QueueTest, ClosingTheSessionCancelsAWaitingDequeueAndLaterRuns) {
  Open(Fifo());
  Status waited;
  std::thread consumer([&] { waited = Run({}, {"dequeue"}, {}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  session_->Close();
  consumer.join();
  EXPECT_EQ(waited.code(), Code::kCancelled) << waited;
  Status later = Run({{"x", Pair(1, 2)}}, {}, {"enqueue"});
  EXPECT_EQ(later.code(), Code::kCancelled) << later;
  EXPECT_THAT(later.message(), HasSubstr("closed"));
  session_->Close();  // idempotent
}

TEST_F(QueueTest, ACallersCancellationCancelsOneStepAndTheSessionGoesOn) {
  Open(Fifo());
  CancellationManager interrupt;
  RunOptions options;
  options.cancellation = &interrupt;
  Status waited;
  std::thread consumer([&] {
    std::vector<Tensor> out;
    waited = session_->Run(options, {}, {"dequeue"}, {}, &out, nullptr);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  interrupt.StartCancel();
  consumer.join();
  EXPECT_EQ(waited.code(), Code::kCancelled) << waited;
  // The session is open: the next steps enqueue and dequeue as ever.
  ASSERT_TRUE(Run({{"x", Pair(1, 2)}}, {}, {"enqueue"}).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session_->Run({}, {"dequeue"}, {}, &out).ok());
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{1, 2}));
  // A manager already cancelled fails the step before it runs: nothing is dequeued.
  ASSERT_TRUE(Run({{"x", Pair(3, 4)}}, {}, {"enqueue"}).ok());
  Status late = session_->Run(options, {}, {"dequeue"}, {}, &out, nullptr);
  EXPECT_EQ(late.code(), Code::kCancelled) << late;
  ASSERT_TRUE(session_->Run({}, {"dequeue"}, {}, &out).ok());
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{3, 4}));
}

}  // namespace
}  // namespace tessera
