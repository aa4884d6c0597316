#include "runtime/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>

#include "runtime/timeline.h"
#include "tests/test_ops.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Values;

TEST(SessionTest, FeedErrorsAreClearAndTheSessionKeepsWorking) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 2}));
  ops::Neg(root.WithOpName("y"), x);
  ops::Const(root.WithOpName("k"), Tensor::Scalar(3.0f));
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  Status missing = s->Run({}, {"y"}, {}, &out);
  EXPECT_EQ(missing.code(), Code::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("You must feed a value for placeholder tensor 'x' with dtype float32 and shape [?,2]"));
  Status dtype = s->Run({{"x", Tensor(DataType::kInt32, TensorShape({1, 2}))}}, {"y"}, {}, &out);
  EXPECT_THAT(dtype.message(), HasSubstr("Cannot feed a int32 tensor to 'x', which has dtype float32"));
  Status shape = s->Run({{"x", Tensor(DataType::kFloat, TensorShape({3}))}}, {"y"}, {}, &out);
  EXPECT_THAT(shape.message(), HasSubstr("Cannot feed value of shape [3] for tensor 'x', which has shape [?,2]"));
  EXPECT_EQ(s->Run({{"nope", Tensor::Scalar(1.0f)}}, {"y"}, {}, &out).code(), Code::kNotFound);
  EXPECT_EQ(s->Run({}, {"nope:0"}, {}, &out).code(), Code::kNotFound);
  EXPECT_EQ(s->Run({}, {"k:5"}, {}, &out).code(), Code::kInvalidArgument);
  EXPECT_EQ(s->Run({}, {"k:"}, {}, &out).code(), Code::kInvalidArgument);
  EXPECT_EQ(s->Run({}, {}, {"ghost"}, &out).code(), Code::kNotFound);
  EXPECT_EQ(testing::Fetch(*s, "k").data<float>()[0], 3.0f);
  Tensor y = testing::Fetch(*s, "y", {{"x", Tensor::FromVector<float>({1, 2}, TensorShape({1, 2}))}});
  EXPECT_THAT(Values<float>(y), ElementsAre(-1, -2));
}

NodeSpec Node(std::string name, std::string op, std::vector<std::string> inputs) {
  NodeSpec n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.inputs = std::move(inputs);
  return n;
}

// A graph that grows after its session was made (tf.Session with ops added later): the
// new nodes run, the variables keep their values, the old nodes their placement reasons.
TEST(SessionTest, ExtendAddsNodesAndKeepsTheVariables) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), TensorShape({}), DataType::kFloat);
  ops::Assign(root.WithOpName("init"), v, 5.0f);
  ops::Const(root.WithOpName("on_cpu1").WithDevice("/cpu:1"), Tensor::Scalar(1.0f));
  SessionConfig config;
  config.device_count = {{"CPU", 2}};
  auto s = testing::MakeSession(root, config);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->Run({}, {}, {"init"}, nullptr).ok());

  Scope more = Scope::NewRootScope();
  auto v2 = ops::Variable(more.WithOpName("v"), TensorShape({}), DataType::kFloat);
  ops::AssignAdd(more.WithOpName("bump"), v2, ops::Const(more.WithOpName("two"), Tensor::Scalar(2.0f)));
  GraphSpec grown;
  ASSERT_TRUE(more.ToSpec(&grown).ok());
  grown.nodes.erase(grown.nodes.begin());  // "v" is already in the session's graph
  Status extended = s->Extend(grown);
  ASSERT_TRUE(extended.ok()) << extended;
  EXPECT_EQ(testing::Fetch(*s, "bump").data<float>()[0], 7.0f);
  EXPECT_EQ(testing::Fetch(*s, "bump").data<float>()[0], 9.0f);
  ASSERT_NE(s->graph().FindNode("bump"), nullptr);
  for (const PlacementRecord& r : s->placement()) {
    if (r.node == "on_cpu1") {
      EXPECT_EQ(r.reason, PlacementReason::kRequested) << r.detail;
    }
  }

  // A name already there, or an input that is nowhere, leaves the graph as it was.
  Status again = s->Extend(grown);
  EXPECT_EQ(again.code(), Code::kInvalidArgument);
  EXPECT_THAT(again.message(), HasSubstr("node 'two' is already in the session's graph"));
  GraphSpec dangling;
  dangling.nodes.push_back(Node("neg", "Neg", {"ghost"}));
  EXPECT_FALSE(s->Extend(dangling).ok());
  EXPECT_EQ(s->graph().FindNode("neg"), nullptr);
  EXPECT_EQ(testing::Fetch(*s, "bump").data<float>()[0], 11.0f);
}

// Steps run while other threads extend the graph: each step sees a whole graph.
TEST(SessionTest, ExtendMayRunBesideSteps) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({}));
  ops::Neg(root.WithOpName("y"), x);
  auto s = testing::MakeSession(root);
  ASSERT_NE(s, nullptr);
  std::atomic<bool> failed{false};
  std::thread runner([&] {
    for (int i = 0; i < 200 && !failed; ++i) {
      std::vector<Tensor> out;
      Status st = s->Run({{"x", Tensor::Scalar(float(i))}}, {"y"}, {}, &out);
      if (!st.ok() || out[0].data<float>()[0] != -float(i)) failed = true;
    }
  });
  for (int i = 0; i < 20; ++i) {
    GraphSpec more;
    more.nodes.push_back(Node(StrCat("twice_", i), "Add", {"y", "y"}));
    Status st = s->Extend(more);
    EXPECT_TRUE(st.ok()) << st;
    std::vector<Tensor> out;
    st = s->Run({{"x", Tensor::Scalar(2.0f)}}, {StrCat("twice_", i)}, {}, &out);
    EXPECT_TRUE(st.ok()) << st;
    if (st.ok()) {
      EXPECT_EQ(out[0].data<float>()[0], -4.0f);
    }
  }
  runner.join();
  EXPECT_FALSE(failed);
}

TEST(SessionTest, PruningSkipsWhatTheFetchDoesNotNeed) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  ops::Neg(root.WithOpName("needs_x"), x);
  ops::Const(root.WithOpName("k"), Tensor::Scalar(1.0f));
  auto s = testing::MakeSession(root);
  EXPECT_EQ(testing::Fetch(*s, "k").data<float>()[0], 1.0f);  // x is never run
}

TEST(SessionTest, FeedingAnyTensorReplacesItsProducer) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a"), Tensor::Scalar(1.0f));
  auto b = ops::Mul(root.WithOpName("b"), a, 10.0f);
  ops::Add(root.WithOpName("c"), b, 1.0f);
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({{"b", Tensor::Scalar(5.0f)}}, {"c", "b"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 6.0f);
  EXPECT_EQ(out[1].data<float>()[0], 5.0f);
}

TEST(SessionTest, FedTensorsAreNeverWrittenInPlace) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  ops::Neg(root.WithOpName("y"), x);
  auto s = testing::MakeSession(root);
  Tensor in = Tensor::FromVector<float>({1, 2, 3});
  Tensor y = testing::Fetch(*s, "y", {{"x", in}});
  EXPECT_THAT(Values<float>(in), ElementsAre(1, 2, 3));
  EXPECT_THAT(Values<float>(y), ElementsAre(-1, -2, -3));
}

TEST(SessionTest, ConfigFromJson) {
  auto c = SessionConfig::FromJson(R"({"inter_op_parallelism_threads": 3, "device_count": {"CPU": 4},
                                      "allow_soft_placement": true, "operation_timeout_in_ms": 5})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->inter_op_parallelism_threads, 3);
  EXPECT_EQ(c->device_count.at("CPU"), 4);
  EXPECT_TRUE(c->allow_soft_placement);
  EXPECT_EQ(c->operation_timeout_in_ms, 5);
  EXPECT_THAT(SessionConfig::FromJson(R"({"inter_op_threads": 3})").status().message(), HasSubstr("Unknown session config field"));
  EXPECT_THAT(SessionConfig::FromJson(R"({"device_count": {"CPU": -1}})").status().message(), HasSubstr("device_count"));
  EXPECT_FALSE(SessionConfig::FromJson("[").ok());
  auto filtered = SessionConfig::FromJson(R"({"device_filters": ["/job:ps", "/job:worker/task:1"]})");
  ASSERT_TRUE(filtered.ok()) << filtered.status();
  EXPECT_EQ(filtered->device_filters, (std::vector<std::string>{"/job:ps", "/job:worker/task:1"}));
  EXPECT_THAT(SessionConfig::FromJson(R"({"device_filters": "/job:ps"})").status().message(),
              HasSubstr("device_filters"));
  EXPECT_FALSE(SessionConfig::FromJson(R"({"device_filters": ["/job:ps/task:x"]})").ok());
  SessionConfig bad;
  bad.device_count = {{"TPU", 1}};
  GraphSpec empty;
  EXPECT_THAT(Session::Create(bad, empty).status().message(), HasSubstr("Unknown device type 'TPU'"));
}

TEST(SessionTest, GpuOptionsUseTensorFlowsFieldNames) {
  auto c = SessionConfig::FromJson(R"({"gpu_options": {"allow_growth": true, "per_process_gpu_memory_fraction": 0.5,
      "visible_device_list": "1,0", "allow_tf32": true, "capture_steps": true,
      "experimental": {"virtual_devices": [{"memory_limit_mb": [1024, 2048.5]}, {"memory_limit_mb": []}]}}})");
  ASSERT_TRUE(c.ok()) << c.status();
  const GpuOptions& g = c->gpu_options;
  EXPECT_TRUE(g.allow_growth);
  EXPECT_TRUE(g.allow_tf32);
  EXPECT_TRUE(g.capture_steps);
  EXPECT_FALSE(GpuOptions().capture_steps);
  EXPECT_EQ(g.per_process_gpu_memory_fraction, 0.5);
  EXPECT_EQ(g.visible_device_list, "1,0");
  ASSERT_EQ(g.virtual_device_memory_limit_mb.size(), 2u);
  EXPECT_EQ(g.virtual_device_memory_limit_mb[0], (std::vector<double>{1024, 2048.5}));
  EXPECT_TRUE(g.virtual_device_memory_limit_mb[1].empty());

  auto error = [](std::string_view text) { return SessionConfig::FromJson(text).status().message(); };
  EXPECT_THAT(error(R"({"gpu_options": {"visible_device_list": "1,,0"}})"), HasSubstr("GPU indices separated"));
  EXPECT_THAT(error(R"({"gpu_options": {"visible_device_list": "0,x"}})"), HasSubstr("GPU indices separated"));
  EXPECT_THAT(error(R"({"gpu_options": {"visible_device_list": "1,1"}})"), HasSubstr("names GPU 1 twice"));
  EXPECT_THAT(error(R"({"gpu_options": {"per_process_gpu_memory_fraction": 1.5}})"), HasSubstr("in [0, 1]"));
  EXPECT_THAT(error(R"({"gpu_options": {"allow_growth": 1}})"), HasSubstr("gpu_options.allow_growth must be a bool"));
  EXPECT_THAT(error(R"({"gpu_options": {"experimental": {"virtual_devices": [{"memory_limit_mb": [-1]}]}}})"),
              HasSubstr("virtual_devices must be"));
  EXPECT_THAT(error(R"({"gpu_options": {"force_gpu_compatible": true}})"),
              HasSubstr("Unknown session config field 'gpu_options.force_gpu_compatible'"));
  // A machine without GPUs takes the options and makes no GPU.
  GraphSpec empty;
  EXPECT_TRUE(Session::Create(*c, empty).ok());
}

TEST(SessionTest, DevicesHaveTheirOwnAllocatorAccounting) {
  Scope root = Scope::NewRootScope();
  auto big = ops::Fill(root.WithOpName("big").WithDevice("/cpu:2"), {256, 256}, 1.0f);
  ops::Sum(root.WithOpName("s").WithDevice("/cpu:2"), big, {0, 1});
  SessionConfig c;
  c.device_count = {{"CPU", 3}};
  c.constant_folding = false;  // the Fill must allocate in the step
  auto s = testing::MakeSession(root, c);
  EXPECT_EQ(testing::Fetch(*s, "s").data<float>()[0], 65536.0f);
  auto stats = [&](int i) { return s->devices().devices()[i]->allocator()->stats(); };
  EXPECT_GE(stats(2).peak_bytes_in_use, 256 * 256 * 4);
  EXPECT_EQ(stats(1).num_allocs, 0);
}

TEST(SessionTest, TimelineIsChromeTraceJson) {
  Scope root = Scope::NewRootScope();
  ops::Neg(root.WithOpName("n"), ops::Placeholder(root.WithOpName("x"), DataType::kFloat));
  auto s = testing::MakeSession(root);
  RunOptions o;
  o.trace_level = RunOptions::TraceLevel::kFullTrace;
  RunMetadata md;
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run(o, {{"x", Tensor::Scalar(1.0f)}}, {"n"}, {}, &out, &md).ok());
  auto j = nlohmann::json::parse(ChromeTraceJson(md));
  bool found = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "n") found = e["args"]["op"] == "Neg";
  }
  EXPECT_TRUE(found) << j.dump();
}

}  // namespace
}  // namespace tessera
