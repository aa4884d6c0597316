// Deadlines and cancellation: long kernels and input pipelines stop at the step's deadline
// and say which node was running; timeouts too large for the clock are no deadline.
#include <gmock/gmock.h>

#include <chrono>
#include <limits>

#include "graph/builder/dataset_ops.h"
#include "graph/builder/ops.h"
#include "tests/hardening/hardening_util.h"
#include "training/coordinator.h"

namespace tessera::testing {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST(DeadlineTest, TimeoutsPastWhatTheClockHoldsMeanNoDeadline) {
  Scope root = Scope::NewRootScope();
  Output y = ops::Add(root.WithOpName("y"), 1.0f, 2.0f);
  for (int64_t timeout : {int64_t{9'300'000'000'000}, std::numeric_limits<int64_t>::max()}) {
    SessionConfig config;
    config.operation_timeout_in_ms = timeout;
    auto session = MakeSession(root, config);
    ASSERT_NE(session, nullptr);
    std::vector<Tensor> out;
    EXPECT_TRUE(session->Run({}, {y.name()}, {}, &out).ok()) << "timeout " << timeout;
    RunOptions options;
    options.timeout_in_ms = timeout;
    EXPECT_TRUE(session->Run(options, {}, {y.name()}, {}, &out, nullptr).ok());
  }
  Coordinator coord;
  coord.RequestStop();
  EXPECT_TRUE(coord.WaitForStop(std::chrono::milliseconds(std::numeric_limits<int64_t>::max())));
}

// Each of these runs for many seconds uncancelled; at the deadline it stops within a chunk.
// The deadline must fall after the inputs of `node` are made, on a loaded machine too.
void ExpectStopsAtTheDeadline(const Scope& root, const std::string& fetch, const std::string& node,
                              int64_t timeout_ms = 200) {
  SessionConfig config;
  config.operation_timeout_in_ms = timeout_ms;
  auto session = MakeSession(root, config);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  const auto start = Clock::now();
  Status s = session->Run({}, {fetch}, {}, &out);
  EXPECT_LT(SecondsSince(start), 5.0);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), HasSubstr(StrCat("Timed out after ", timeout_ms, " ms")));
  EXPECT_THAT(s.message(), HasSubstr("[[node " + node));
}

TEST(DeadlineTest, AMatMulOfATrillionFlopsStopsAtTheDeadline) {
  Scope root = Scope::NewRootScope();
  Output a = ops::Fill(root, Tensor::FromVector<int64_t>({8192, 8192}), 1.0f);
  // Filling the two 256 MiB operands takes a good part of 200 ms on a busy machine.
  ExpectStopsAtTheDeadline(root, ops::MatMul(root.WithOpName("big"), a, a).name(), "big (MatMul)", 1500);
  Scope transposed = Scope::NewRootScope();
  Output b = ops::Fill(transposed, Tensor::FromVector<int64_t>({8192, 8192}), 1.0f);
  ExpectStopsAtTheDeadline(
      transposed, ops::MatMul(transposed.WithOpName("big"), b, b, {.transpose_a = true}).name(), "big (MatMul)",
      1500);
}

TEST(DeadlineTest, ARandomTensorOfAGigabyteStopsAtTheDeadline) {
  Scope root = Scope::NewRootScope();
  Output r = ops::RandomUniform(root.WithOpName("noise"), Tensor::FromVector<int64_t>({int64_t{1} << 27}),
                                DataType::kDouble);
  ExpectStopsAtTheDeadline(root, r.name(), "noise (RandomUniform)");
}

TEST(DeadlineTest, AParallelKernelStopsAtTheDeadline) {
  // 4 GiB to fill: seconds of ParallelFor; the message names the kernel that stopped midway.
  Scope root = Scope::NewRootScope();
  Output ones = ops::Fill(root.WithOpName("ones"), Tensor::FromVector<int64_t>({int64_t{1} << 30}), 1.0f);
  ExpectStopsAtTheDeadline(root, ops::Sum(root.WithOpName("sum"), ones, {0}).name(), "ones (Fill)");
}

// An input pipeline that would take minutes for one element.
TEST(DeadlineTest, ABatchOfABillionElementsStopsAtTheDeadline) {
  for (bool prefetch : {false, true}) {
    Scope root = Scope::NewRootScope();
    ops::Dataset ds = ops::Batch(root, ops::RangeDataset(root, int64_t{0}, int64_t{1} << 62), int64_t{1'000'000'000});
    if (prefetch) ds = ops::Prefetch(root, ds, int64_t{1});
    ops::Iterator it = ops::InitializableIterator(root.WithOpName("it"), ds);
    std::vector<Output> next = ops::GetNext(root.WithOpName("next"), it);
    SessionConfig config;
    config.operation_timeout_in_ms = 300;
    auto session = MakeSession(root, config);
    ASSERT_NE(session, nullptr);
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({}, {}, {it.initializer.node()->name()}, &out).ok());
    const auto start = Clock::now();
    Status s = session->Run({}, {next[0].name()}, {}, &out);
    EXPECT_LT(SecondsSince(start), 5.0) << (prefetch ? "prefetched" : "direct");
    EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
    EXPECT_THAT(s.message(), HasSubstr("[[node next (IteratorGetNext)"));
  }
}

}  // namespace
}  // namespace tessera::testing
