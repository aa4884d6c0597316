// The seed scenarios, end to end through the C++ API and a session.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "tests/test_ops.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Values;

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

SessionConfig FourCpus() {
  SessionConfig c;
  c.device_count = {{"CPU", 4}};
  return c;
}

const PlacementRecord& RecordOf(const Session& s, std::string_view node) {
  for (const PlacementRecord& r : s.placement()) {
    if (r.node == node) return r;
  }
  static PlacementRecord none;
  ADD_FAILURE() << "no placement record for " << node;
  return none;
}

TEST(ScenarioTest, VariablesPinnedByScopeAndOpsDefaulting) {
  Scope root = Scope::NewRootScope();
  Scope pinned = root.WithDevice("/cpu:1");
  auto w = ops::Variable(pinned.WithOpName("w"), TensorShape({2, 2}), DataType::kFloat);
  auto b = ops::Variable(pinned.WithOpName("b"), TensorShape({2}), DataType::kFloat);
  auto init_w = ops::Assign(root.WithOpName("init_w"), w, Tensor::FromVector<float>({1, 0, 0, 2}, TensorShape({2, 2})));
  auto init_b = ops::Assign(root.WithOpName("init_b"), b, Tensor::FromVector<float>({1, 1}));
  ops::NoOp(root.WithOpName("init").WithControlDependencies({init_w.op(), init_b.op()}));
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 2}));
  ops::BiasAdd(root.WithOpName("y"), ops::MatMul(root.WithOpName("xw"), x, w), b);
  auto s = testing::MakeSession(root, FourCpus());
  EXPECT_EQ(RecordOf(*s, "w").device, kCpu1);
  EXPECT_EQ(RecordOf(*s, "init_w").device, kCpu1);  // colocated through the reference edge
  EXPECT_EQ(RecordOf(*s, "init_w").reason, PlacementReason::kColocated);
  EXPECT_EQ(RecordOf(*s, "xw").device, kCpu0);
  EXPECT_EQ(RecordOf(*s, "y").reason, PlacementReason::kDefault);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {}, {"init"}, &out).ok());
  Tensor y = testing::Fetch(*s, "y", {{"x", Tensor::FromVector<float>({3, 4}, TensorShape({1, 2}))}});
  EXPECT_THAT(Values<float>(y), ElementsAre(4, 9));
}

TEST(ScenarioTest, DeviceFunctionPutsVariablesOnCpu0AndTheRestOnCpu1) {
  Scope root = Scope::NewRootScope();
  Scope f = root.WithDeviceFunction([](const Node& n) {
    return std::string(n.op() == "VariableV2" ? "/cpu:0" : "/cpu:1");
  });
  auto v = ops::Variable(f.WithOpName("v"), TensorShape({}), DataType::kFloat);
  ops::Assign(f.ColocateWith(v).WithOpName("init"), v, 2.0f);
  ops::Mul(f.WithOpName("twice"), v, 2.0f);
  auto s = testing::MakeSession(root, FourCpus());
  EXPECT_EQ(RecordOf(*s, "v").device, kCpu0);
  EXPECT_EQ(RecordOf(*s, "v").reason, PlacementReason::kFunction);
  EXPECT_EQ(RecordOf(*s, "twice").device, kCpu1);
  EXPECT_EQ(RecordOf(*s, "init").device, kCpu0);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {}, {"init"}, &out).ok());
  EXPECT_EQ(testing::Fetch(*s, "twice").data<float>()[0], 4.0f);

  // An Assign that the function sends to CPU:1 contradicts its variable's CPU:0: rejected,
  // as TensorFlow does, unless soft placement reconciles them.
  ops::Assign(f.WithOpName("conflict"), v, 3.0f);
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  Status st = Session::Create(FourCpus(), def).status();
  EXPECT_THAT(st.message(), HasSubstr("Cannot colocate nodes 'conflict' and 'v'"));
  SessionConfig soft = FourCpus();
  soft.allow_soft_placement = true;
  EXPECT_TRUE(Session::Create(soft, def).ok());
}

TEST(ScenarioTest, SoftPlacementOfAMissingDevice) {
  Scope root = Scope::NewRootScope();
  ops::Neg(root.WithOpName("n").WithDevice("/gpu:0"), 3.0f);
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  SessionConfig hard = FourCpus();
  auto failed = Session::Create(hard, def);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(),
              HasSubstr("Cannot assign a device for operation n: Could not satisfy explicit device "
                        "specification '/device:GPU:0' because no devices matching that specification "
                        "are registered in this process"));
  SessionConfig soft = FourCpus();
  soft.allow_soft_placement = true;
  auto s = Session::Create(soft, def);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(RecordOf(**s, "n").device, kCpu0);
  EXPECT_EQ(RecordOf(**s, "n").reason, PlacementReason::kSoftFallback);
  EXPECT_EQ(testing::Fetch(**s, "n").data<float>()[0], -3.0f);
}

TEST(ScenarioTest, ControlDependenciesWaitForTwoOthers) {
  testing::RegisterTestOps();
  testing::ClearRecordedTags();
  Scope root = Scope::NewRootScope();
  auto rec = [&](const Scope& s, const char* tag, int ms) {
    NodeSpec d;
    d.op = "TestRecord";
    d.attrs = {{"tag", std::string(tag)}, {"sleep_ms", ms}};
    return Operation(s.WithOpName(tag).AddNode(d));
  };
  auto first = rec(root.WithDevice("/cpu:1"), "first", 40);
  auto second = rec(root.WithDevice("/cpu:2"), "second", 20);
  rec(root.WithControlDependencies({first, second}), "last", 0);
  SessionConfig c = FourCpus();
  c.inter_op_parallelism_threads = 4;
  auto s = testing::MakeSession(root, c);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {}, {"last"}, &out).ok());
  std::vector<std::string> tags = testing::RecordedTags();
  ASSERT_EQ(tags.size(), 3u);
  EXPECT_EQ(tags.back(), "last");
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_UNDER_TSAN 1
#endif
#endif

int ProcessThreads() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

TEST(ScenarioTest, ConfiguredPoolSizesAreTheThreadsUsed) {
  testing::RegisterTestOps();
  testing::ClearIntraThreadsSeen();
  Scope root = Scope::NewRootScope();
  NodeSpec intra;
  intra.op = "TestIntraThreads";
  intra.attrs = {{"n", int64_t{12}}};
  root.WithOpName("intra").AddNode(intra);
  auto m = ops::Fill(root, {384, 384}, 0.5f);
  ops::Sum(root.WithOpName("mm"), ops::MatMul(root, m, m), {0, 1});
  SessionConfig c;
  c.inter_op_parallelism_threads = 2;
  c.intra_op_parallelism_threads = 3;
  c.use_per_session_threads = true;
  [[maybe_unused]] int before = ProcessThreads();
  auto s = testing::MakeSession(root, c);
  EXPECT_EQ(s->inter_op_threads(), 2);
  EXPECT_EQ(s->intra_op_threads(), 3);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {"mm"}, {"intra"}, &out).ok());
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 384.0f * 384 * 384 * 0.25f);
  // Exactly the configured threads exist: no hidden OpenMP or BLAS pool appeared.
  // (ThreadSanitizer adds a thread of its own.)
#ifndef TESSERA_UNDER_TSAN
  EXPECT_EQ(ProcessThreads() - before, 2 + 3);
#endif
  std::set<std::thread::id> seen = testing::IntraThreadsSeen();
  EXPECT_GE(seen.size(), 2u);
  EXPECT_LE(seen.size(), 3u);
}

TEST(ScenarioTest, TwoSessionsHaveSeparateVariables) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), TensorShape({}), DataType::kFloat);
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  ops::Assign(root.WithOpName("set"), v, x);
  auto s1 = testing::MakeSession(root);
  auto s2 = testing::MakeSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(s1->Run({{"x", Tensor::Scalar(1.0f)}}, {}, {"set"}, &out).ok());
  ASSERT_TRUE(s2->Run({{"x", Tensor::Scalar(2.0f)}}, {}, {"set"}, &out).ok());
  EXPECT_EQ(testing::Fetch(*s1, "v").data<float>()[0], 1.0f);
  EXPECT_EQ(testing::Fetch(*s2, "v").data<float>()[0], 2.0f);
}

TEST(ScenarioTest, ResetFreesOneContainer) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Variable(root.WithContainer("c1").WithOpName("a"), TensorShape({}), DataType::kFloat);
  auto b = ops::Variable(root.WithOpName("b"), TensorShape({}), DataType::kFloat);
  ops::Assign(root.WithOpName("set_a"), a, 1.0f);
  ops::Assign(root.WithOpName("set_b"), b, 2.0f);
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {}, {"set_a", "set_b"}, &out).ok());
  s->Reset({"c1"});
  Status gone = s->Run({}, {"a"}, {}, &out);
  EXPECT_EQ(gone.code(), Code::kFailedPrecondition);
  EXPECT_THAT(gone.message(), HasSubstr("uninitialized value a"));
  EXPECT_EQ(testing::Fetch(*s, "b").data<float>()[0], 2.0f);
  s->Reset({""});
  EXPECT_EQ(s->Run({}, {"b"}, {}, &out).code(), Code::kFailedPrecondition);
}

TEST(ScenarioTest, ConcurrentRunFromEightThreads) {
  Scope root = Scope::NewRootScope();
  auto counter = ops::Variable(root.WithOpName("counter"), TensorShape({}), DataType::kInt64);
  ops::Assign(root.WithOpName("zero"), counter, int64_t{0});
  ops::AssignAdd(root.WithOpName("inc"), counter, int64_t{1});
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1}));
  ops::Sum(root.WithOpName("sq"), ops::Square(root, x), 0);
  SessionConfig c = FourCpus();
  c.inter_op_parallelism_threads = 2;
  auto s = testing::MakeSession(root, c);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {}, {"zero"}, &out).ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        std::vector<Tensor> o;
        float v = static_cast<float>(t + i);
        if (!s->Run({{"x", Tensor::FromVector<float>({v, 1})}}, {"sq"}, {"inc"}, &o).ok() ||
            o[0].data<float>()[0] != v * v + 1) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(testing::Fetch(*s, "counter").data<int64_t>()[0], 800);
}

}  // namespace
}  // namespace tessera
