// The executor through sessions, at 1, 2 and 4 inter-op threads.
#include "runtime/executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/test_ops.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

class ExecutorTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { testing::RegisterTestOps(); }
  SessionConfig Config() {
    SessionConfig c;
    c.inter_op_parallelism_threads = GetParam();
    c.intra_op_parallelism_threads = 2;
    c.use_per_session_threads = true;
    c.constant_folding = false;  // these graphs of constants are here to be run, not folded ahead
    return c;
  }
};

Operation Record(const Scope& s, const std::string& tag, int sleep_ms) {
  NodeSpec def;
  def.op = "TestRecord";
  def.attrs = {{"tag", tag}, {"sleep_ms", sleep_ms}};
  return Operation(s.WithOpName(tag).AddNode(def));
}

TEST_P(ExecutorTest, WideGraphsComputeTheSameAtEveryThreadCount) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kInt64, TensorShape({}));
  std::vector<Input> layer;
  for (int i = 0; i < 300; ++i) layer.push_back(ops::Add(root, x, static_cast<int64_t>(i)));
  std::vector<Input> next;
  for (size_t i = 0; i + 1 < layer.size(); i += 2) {
    next.push_back(ops::Mul(root, layer[i].output(), layer[i + 1].output()));
  }
  ops::AddN(root.WithOpName("total"), next);
  auto s = testing::MakeSession(root, Config());
  for (int64_t v : {0, 1, 5}) {
    int64_t want = 0;
    for (int64_t i = 0; i < 300; i += 2) want += (v + i) * (v + i + 1);
    Tensor t = testing::Fetch(*s, "total", {{"x", Tensor::Scalar(v)}});
    EXPECT_EQ(t.data<int64_t>()[0], want);
  }
}

TEST_P(ExecutorTest, ControlDependenciesDelayTheDependentNode) {
  testing::ClearRecordedTags();
  Scope root = Scope::NewRootScope();
  auto a = Record(root, "a", 30);
  auto b = Record(root, "b", 10);
  Record(root.WithControlDependencies({a, b}), "c", 0);
  Record(root, "free", 0);
  auto s = testing::MakeSession(root, Config());
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {}, {"c", "free"}, &out).ok());
  std::vector<std::string> tags = testing::RecordedTags();
  ASSERT_EQ(tags.size(), 4u);
  auto pos = [&](const std::string& t) { return std::find(tags.begin(), tags.end(), t) - tags.begin(); };
  EXPECT_GT(pos("c"), pos("a"));
  EXPECT_GT(pos("c"), pos("b"));
}

TEST_P(ExecutorTest, ConcurrencyNeverExceedsTheInterOpPool) {
  testing::ResetMeet();
  Scope root = Scope::NewRootScope();
  std::vector<Operation> meets;
  for (int i = 0; i < 4; ++i) {
    NodeSpec def;
    def.op = "TestMeet";
    def.attrs = {{"expected", static_cast<int64_t>(GetParam())}};
    meets.push_back(Operation(root.AddNode(def)));
  }
  ops::NoOp(root.WithControlDependencies(meets).WithOpName("all"));
  auto s = testing::MakeSession(root, Config());
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {}, {"all"}, &out).ok());
  // Every meeting reaches the pool size (so the pool is really used) and none exceeds it.
  EXPECT_EQ(testing::MaxMeetConcurrency(), std::min(GetParam(), 4));
}

TEST_P(ExecutorTest, AnErrorAbortsTheStepAndNamesTheNode) {
  testing::ClearRecordedTags();
  Scope root = Scope::NewRootScope();
  NodeSpec fail;
  fail.op = "TestFail";
  fail.attrs = {{"message", "kaboom"}};
  Operation f(root.WithOpName("f").AddNode(fail));
  Record(root.WithControlDependencies({f}), "after", 0);
  auto s = testing::MakeSession(root, Config());
  std::vector<Tensor> out;
  Status st = s->Run({}, {}, {"after"}, &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("kaboom"));
  EXPECT_THAT(st.message(), HasSubstr("[[node f (TestFail) on /job:localhost/replica:0/task:0/device:CPU:0]]"));
  EXPECT_TRUE(testing::RecordedTags().empty());  // the dependent node was skipped
}

TEST_P(ExecutorTest, DeadlineCancelsABlockedAsyncNode) {
  Scope root = Scope::NewRootScope();
  NodeSpec block;
  block.op = "TestBlock";
  root.WithOpName("block").AddNode(block);
  ops::Const(root.WithOpName("k"), Tensor::Scalar(1.0f));
  SessionConfig config = Config();
  config.operation_timeout_in_ms = 50;
  auto s = testing::MakeSession(root, config);
  std::vector<Tensor> out;
  Status st = s->Run({}, {}, {"block"}, &out);
  EXPECT_EQ(st.code(), Code::kDeadlineExceeded);
  EXPECT_THAT(st.message(), HasSubstr("[[node block (TestBlock)"));
  // The session keeps working, and a per-run timeout overrides the config's.
  EXPECT_EQ(testing::Fetch(*s, "k").data<float>()[0], 1.0f);
  RunOptions options;
  options.timeout_in_ms = 20;
  EXPECT_EQ(s->Run(options, {}, {}, {"block"}, &out, nullptr).code(), Code::kDeadlineExceeded);
}

TEST_P(ExecutorTest, AKernelThatThrowsFailsItsNodeNotTheProcess) {
  for (const char* what : {"bad_alloc", "a library's own error"}) {
    Scope root = Scope::NewRootScope();
    NodeSpec thrower;
    thrower.op = "TestThrow";
    thrower.attrs = {{"what", std::string(what)}};
    root.WithOpName("thrower").AddNode(thrower);
    ops::Const(root.WithOpName("k"), Tensor::Scalar(1.0f));
    auto s = testing::MakeSession(root, Config());
    std::vector<Tensor> out;
    Status st = s->Run({}, {}, {"thrower"}, &out);
    EXPECT_EQ(st.code(), std::string(what) == "bad_alloc" ? Code::kResourceExhausted : Code::kInternal);
    EXPECT_THAT(st.message(), HasSubstr("[[node thrower (TestThrow)"));
    if (std::string(what) != "bad_alloc") {
      EXPECT_THAT(st.message(), HasSubstr("a library's own error"));
    }
    EXPECT_EQ(testing::Fetch(*s, "k").data<float>()[0], 1.0f);
  }
}

TEST_P(ExecutorTest, AsyncNodesThatFinishInsideComputeAsync) {
  // The only root is an async node that completes inline, so the whole step, including
  // its end, runs while that node is still inside ComputeAsync; then several such roots.
  for (int roots : {1, 6}) {
    Scope root = Scope::NewRootScope();
    std::vector<Input> ends;
    for (int i = 0; i < roots; ++i) {
      NodeSpec def;
      def.op = "TestInlineAsync";
      def.attrs = {{"value", static_cast<double>(i + 1)}};
      Output x(root.AddNode(def));
      for (int j = 0; j < 16; ++j) x = ops::Neg(root, x);
      ends.push_back(x);
    }
    ops::AddN(root.WithOpName("sum"), ends);
    auto s = testing::MakeSession(root, Config());
    for (int step = 0; step < 50; ++step) {
      EXPECT_EQ(testing::Fetch(*s, "sum").data<float>()[0], static_cast<float>(roots * (roots + 1) / 2));
    }
  }
}

TEST_P(ExecutorTest, StepStatsCoverEveryNode) {
  Scope root = Scope::NewRootScope();
  ops::Add(root.WithOpName("y"), ops::Const(root.WithOpName("a"), Tensor::Scalar(1.0f)), 2.0f);
  auto s = testing::MakeSession(root, Config());
  RunOptions options;
  options.trace_level = RunOptions::TraceLevel::kFullTrace;
  RunMetadata md;
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run(options, {}, {"y"}, {}, &out, &md).ok());
  std::set<std::string> names;
  for (const NodeExecStats& n : md.step_stats) {
    names.insert(n.node);
    EXPECT_LE(n.start_us, n.end_us);
    EXPECT_EQ(n.device, "/job:localhost/replica:0/task:0/device:CPU:0");
  }
  EXPECT_TRUE(names.count("y") && names.count("a"));
  EXPECT_EQ(md.placement.size(), md.step_stats.size());
}

INSTANTIATE_TEST_SUITE_P(InterOpThreads, ExecutorTest, ::testing::Values(1, 2, 4));

}  // namespace
}  // namespace tessera
