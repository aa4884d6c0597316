// TensorFlow 1.x's dataflow control flow in the executor: graphs tf.compat.v1.cond and
// while_loop built (with TensorFlow 2.21, v1 control flow), with gradients through loops, run
// from their GraphDefs, and small graphs built here for the frame logic and stacks on their
// own. Expected values are TensorFlow's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <functional>
#include <set>
#include <thread>

#include "graph/serialize/graph_json.h"
#include "graph/serialize/tensorflow_graph.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// Where a test puts a node: "" leaves it to the placer.
using DeviceOf = std::function<std::string(const NodeSpec& node, int index)>;

std::unique_ptr<Session> Load(const std::string& file, int inter_op_threads = 1, const DeviceOf& device_of = nullptr) {
  std::ifstream in(std::string(TESSERA_TEST_DATA_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  auto def = GraphSpecFromTensorFlow(text.str(), TensorFlowFormat::kText);
  EXPECT_TRUE(def.ok()) << def.status();
  SessionConfig config;
  config.inter_op_parallelism_threads = inter_op_threads;
  if (device_of) {
    config.device_count["CPU"] = 2;
    config.allow_soft_placement = true;  // where a stack's users must share its device
    // A node TensorFlow colocated with another goes where that one goes.
    for (size_t i = 0; i < def->nodes.size(); ++i) {
      NodeSpec& node = def->nodes[i];
      if (node.colocate_with.empty()) node.device = device_of(node, static_cast<int>(i));
    }
  }
  auto session = Session::Create(config, *def);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

template <typename T>
T RunScalar(Session& s, const std::string& fetch, std::vector<std::pair<std::string, Tensor>> feeds,
            Status* status = nullptr) {
  std::vector<Tensor> out;
  Status st = s.Run(feeds, {fetch}, {}, &out);
  if (status != nullptr) *status = st;
  if (!st.ok()) {
    if (status == nullptr) ADD_FAILURE() << st;
    return T();
  }
  return out[0].data<T>()[0];
}

// tf_cond_nested_while.pbtxt:
//   y = cond(x > 0, x * 2, x - 1)
//   total = while i < n: (inner: while j < i: s += i), acc += s  -> sum of i^2 for i < n
TEST(ControlFlowTest, CondTakesOneBranch) {
  auto s = Load("tf_cond_nested_while.pbtxt");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(RunScalar<float>(*s, "y", {{"x", Tensor::Scalar(3.0f)}}), 6.0f);
  EXPECT_EQ(RunScalar<float>(*s, "y", {{"x", Tensor::Scalar(-3.0f)}}), -4.0f);
}

TEST(ControlFlowTest, NestedLoops) {
  auto s = Load("tf_cond_nested_while.pbtxt");
  ASSERT_NE(s, nullptr);
  for (int n : {0, 1, 2, 5, 30}) {
    EXPECT_EQ(RunScalar<int32_t>(*s, "total", {{"n", Tensor::Scalar(n)}}), (n - 1) * n * (2 * n - 1) / 6) << n;
  }
}

// tf_control_flow_cases.pbtxt:
//   loop_in_cond = cond(x > 0, while i < n: v *= 2 (from x), -1)
//   collatz_steps = while c > 1: c = cond(c % 2 == 0, c // 2, 3c + 1)   (parallel_iterations=1)
//   faulty_sum = while i < 10: acc += 12 / (i - n)     (fails when i == n)
//   count_to_n = while i < n: c += 1                    (parallel_iterations=32)
TEST(ControlFlowTest, LoopInsideACond) {
  auto s = Load("tf_control_flow_cases.pbtxt");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(RunScalar<float>(*s, "loop_in_cond", {{"x", Tensor::Scalar(1.5f)}, {"n", Tensor::Scalar(6)}}), 96.0f);
  // The untaken branch's loop gets only dead values: its frame finishes without running.
  EXPECT_EQ(RunScalar<float>(*s, "loop_in_cond", {{"x", Tensor::Scalar(-1.0f)}, {"n", Tensor::Scalar(3)}}), -1.0f);
}

TEST(ControlFlowTest, CondInsideALoop) {
  auto s = Load("tf_control_flow_cases.pbtxt");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(RunScalar<int32_t>(*s, "collatz_steps", {{"n", Tensor::Scalar(6)}}), 8);
  EXPECT_EQ(RunScalar<int32_t>(*s, "collatz_steps", {{"n", Tensor::Scalar(27)}}), 111);
  EXPECT_EQ(RunScalar<int32_t>(*s, "collatz_steps", {{"n", Tensor::Scalar(1)}}), 0);
}

TEST(ControlFlowTest, AnErrorInsideAnIterationFailsTheStepAndNamesTheNode) {
  auto s = Load("tf_control_flow_cases.pbtxt", 4);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(RunScalar<int32_t>(*s, "faulty_sum", {{"n", Tensor::Scalar(20)}}), -2);
  Status status;
  RunScalar<int32_t>(*s, "faulty_sum", {{"n", Tensor::Scalar(3)}}, &status);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("Integer division by zero"));
  EXPECT_THAT(status.message(), HasSubstr("faulty/"));
  // The session goes on working.
  EXPECT_EQ(RunScalar<int32_t>(*s, "faulty_sum", {{"n", Tensor::Scalar(20)}}), -2);
}

// A tensor of a loop's body has a value per iteration: fetching it is refused, saying so
// (TensorFlow refuses it when the graph is built), rather than a dead value's message.
TEST(ControlFlowTest, FetchingATensorInsideALoopSaysItIsInALoop) {
  auto s = Load("tf_control_flow_cases.pbtxt");
  ASSERT_NE(s, nullptr);
  Status status;
  RunScalar<int32_t>(*s, "count/add", {{"n", Tensor::Scalar(3)}}, &status);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("Cannot fetch 'count/add': it is inside the while loop of frame 'count/"));
  EXPECT_THAT(status.message(), ::testing::Not(HasSubstr("branch that was not taken")));
  EXPECT_EQ(RunScalar<int32_t>(*s, "count_to_n", {{"n", Tensor::Scalar(3)}}), 3);
}

// A malformed graph whose fetched node fires twice (a Merge fed back through a
// NextIteration without an Enter) is an error, as in TensorFlow, not its last value.
TEST(ControlFlowTest, AValueReturnedTwiceIsAnErrorNotTheLastValue) {
  auto def = GraphSpecFromJson(R"({"nodes": [
    {"name": "c", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [], "data": [1]}}},
    {"name": "m", "op": "Merge", "inputs": ["c", "n"]},
    {"name": "a", "op": "Add", "inputs": ["m", "c"]},
    {"name": "n", "op": "NextIteration", "inputs": ["a"]}]})");
  ASSERT_TRUE(def.ok()) << def.status();
  auto session = Session::Create({}, *def);
  ASSERT_TRUE(session.ok()) << session.status();
  Status status;
  RunScalar<float>(**session, "m", {}, &status);
  EXPECT_EQ(status.code(), Code::kInternal) << status;
  EXPECT_THAT(status.message(), HasSubstr("Retval[0] has already been set"));
}

TEST(ControlFlowTest, ManyIterationsInFlight) {
  for (int threads : {1, 4}) {
    auto s = Load("tf_control_flow_cases.pbtxt", threads);
    ASSERT_NE(s, nullptr);
    for (int n : {0, 1, 31, 32, 33, 5000}) {
      EXPECT_EQ(RunScalar<int32_t>(*s, "count_to_n", {{"n", Tensor::Scalar(n)}}), n) << n << " on " << threads;
    }
  }
}

TEST(ControlFlowTest, ConcurrentStepsKeepTheirOwnFrames) {
  auto s = Load("tf_cond_nested_while.pbtxt", 4);
  ASSERT_NE(s, nullptr);
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        const int n = 3 + t + k % 5;
        if (RunScalar<int32_t>(*s, "total", {{"n", Tensor::Scalar(n)}}) != (n - 1) * n * (2 * n - 1) / 6) ++wrong[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

// Merge runs with the live input when the other is dead, and is dead only when both are.
TEST(ControlFlowTest, DeadInputsReachAMerge) {
  auto def = GraphSpecFromJson(R"({"nodes": [
    {"name": "p", "op": "Placeholder", "attrs": {"dtype": "bool", "shape": []}},
    {"name": "q", "op": "Placeholder", "attrs": {"dtype": "bool", "shape": []}},
    {"name": "v", "op": "Const", "attrs": {"dtype": "int32", "value": {"dtype": "int32", "shape": [], "data": [7]}}},
    {"name": "s1", "op": "Switch", "inputs": ["v", "p"]},
    {"name": "s2", "op": "Switch", "inputs": ["s1:1", "q"]},
    {"name": "neg", "op": "Neg", "inputs": ["s2:0"]},
    {"name": "m", "op": "Merge", "inputs": ["neg", "s2:1"]},
    {"name": "after", "op": "Identity", "inputs": ["m"]},
    {"name": "trigger", "op": "ControlTrigger", "inputs": ["^m"]},
    {"name": "outer", "op": "Merge", "inputs": ["s1:0", "m"]}
  ]})");
  ASSERT_TRUE(def.ok()) << def.status();
  auto s = Session::Create(SessionConfig(), *def);
  ASSERT_TRUE(s.ok()) << s.status();
  auto run = [&](bool p, bool q, std::vector<Tensor>* out) {
    return (*s)->Run({{"p", Tensor::Scalar(p)}, {"q", Tensor::Scalar(q)}}, {"outer", "outer:1"}, {"trigger"}, out);
  };
  std::vector<Tensor> out;
  ASSERT_TRUE(run(true, true, &out).ok());
  EXPECT_EQ(out[0].data<int32_t>()[0], 7);
  EXPECT_EQ(out[1].data<int32_t>()[0], 1);
  ASSERT_TRUE(run(true, false, &out).ok());
  EXPECT_EQ(out[0].data<int32_t>()[0], -7);
  ASSERT_TRUE(run(false, true, &out).ok());  // m is dead; outer takes s1:0
  EXPECT_EQ(out[0].data<int32_t>()[0], 7);
  EXPECT_EQ(out[1].data<int32_t>()[0], 0);
  // Fetching a dead value is an error, as in TensorFlow.
  Status dead = (*s)->Run({{"p", Tensor::Scalar(false)}, {"q", Tensor::Scalar(true)}}, {"after"}, {}, &out);
  EXPECT_FALSE(dead.ok());
}

TEST(ControlFlowTest, AMalformedLoopIsAnError) {
  auto only_back = GraphSpecFromJson(R"({"nodes": [
    {"name": "m", "op": "Merge", "inputs": ["n"], "attrs": {"T": "int32", "N": 1}},
    {"name": "n", "op": "NextIteration", "inputs": ["m"]}
  ]})");
  ASSERT_TRUE(only_back.ok()) << only_back.status();
  auto s = Session::Create(SessionConfig(), *only_back);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("has only NextIteration inputs"));
}

// The same graphs with their nodes spread over two devices. Each edge between them inside a
// loop becomes a _Send/_Recv pair per iteration, keyed by frame and iteration, and each
// device follows the loop with a control loop of its own; dead values cross too.
std::string Alternate(const NodeSpec&, int index) { return index % 2 == 0 ? "/device:CPU:0" : "/device:CPU:1"; }
// The loops' structure on one device and what they compute on the other.
std::string ComputeOnSecond(const NodeSpec& node, int) {
  static const std::set<std::string> structure = {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond",
                                                  "Identity", "Const", "Placeholder"};
  return structure.count(node.op) > 0 ? "/device:CPU:0" : "/device:CPU:1";
}

std::vector<std::pair<std::string, DeviceOf>> Placements(bool with_one_device) {
  std::vector<std::pair<std::string, DeviceOf>> placements = {{"alternate", Alternate},
                                                              {"compute on second", ComputeOnSecond}};
  if (with_one_device) placements.insert(placements.begin(), {"one device", nullptr});
  return placements;
}

TEST(ControlFlowTest, LoopsAndCondsSpanningTwoDevices) {
  for (const auto& [placement, place] : Placements(/*with_one_device=*/false)) {
    for (int threads : {1, 4}) {
      SCOPED_TRACE(StrCat(placement, ", ", threads, " threads"));
      auto nested = Load("tf_cond_nested_while.pbtxt", threads, place);
      ASSERT_NE(nested, nullptr);
      EXPECT_EQ(RunScalar<float>(*nested, "y", {{"x", Tensor::Scalar(3.0f)}}), 6.0f);
      EXPECT_EQ(RunScalar<float>(*nested, "y", {{"x", Tensor::Scalar(-3.0f)}}), -4.0f);
      for (int n : {0, 1, 5, 30}) {
        EXPECT_EQ(RunScalar<int32_t>(*nested, "total", {{"n", Tensor::Scalar(n)}}), (n - 1) * n * (2 * n - 1) / 6)
            << n;
      }
      auto cases = Load("tf_control_flow_cases.pbtxt", threads, place);
      ASSERT_NE(cases, nullptr);
      EXPECT_EQ(RunScalar<float>(*cases, "loop_in_cond", {{"x", Tensor::Scalar(1.5f)}, {"n", Tensor::Scalar(6)}}),
                96.0f);
      EXPECT_EQ(RunScalar<float>(*cases, "loop_in_cond", {{"x", Tensor::Scalar(-1.0f)}, {"n", Tensor::Scalar(3)}}),
                -1.0f);
      EXPECT_EQ(RunScalar<int32_t>(*cases, "collatz_steps", {{"n", Tensor::Scalar(27)}}), 111);
      for (int n : {0, 1, 33, 500}) {
        EXPECT_EQ(RunScalar<int32_t>(*cases, "count_to_n", {{"n", Tensor::Scalar(n)}}), n) << n;
      }
      Status status;
      RunScalar<int32_t>(*cases, "faulty_sum", {{"n", Tensor::Scalar(3)}}, &status);
      EXPECT_EQ(status.code(), Code::kInvalidArgument);
      EXPECT_THAT(status.message(), HasSubstr("Integer division by zero"));
      EXPECT_EQ(RunScalar<int32_t>(*cases, "faulty_sum", {{"n", Tensor::Scalar(20)}}), -2);
    }
  }
}

std::vector<float> RunFloats(Session& s, const std::string& fetch, std::vector<std::pair<std::string, Tensor>> feeds) {
  return testing::Values<float>(testing::Fetch(s, fetch, feeds));
}

// tf_while_gradient.pbtxt (written by tf_while_gradient.py, which prints these values):
//   v = while i < n: tanh(m @ v) * x, from v = x; gx, gm = gradients(sum(v * v), [x, m])
// The gradient loop pops, in reverse, what the forward loop pushed on stacks that live for
// the step. On one device, and spread over two (the stacks' handles cross with the values).
TEST(ControlFlowTest, WhileLoopGradients) {
  using ::testing::ElementsAre;
  using ::testing::FloatNear;
  for (const auto& [placement, place] : Placements(/*with_one_device=*/true))
  for (int threads : {1, 4}) {
    SCOPED_TRACE(StrCat(placement, ", ", threads, " threads"));
    auto s = Load("tf_while_gradient.pbtxt", threads, place);
    ASSERT_NE(s, nullptr);
    const Tensor x = Tensor::FromVector<float>({0.7f, -1.3f});
    EXPECT_THAT(RunFloats(*s, "v", {{"x", x}}), ElementsAre(FloatNear(-0.01023571f, 1e-5), FloatNear(0.69985527f, 1e-5)));
    EXPECT_THAT(RunFloats(*s, "gx", {{"x", x}}), ElementsAre(FloatNear(0.04552671f, 1e-5), FloatNear(-2.4593742f, 1e-5)));
    EXPECT_THAT(RunFloats(*s, "gm", {{"x", x}}),
                ElementsAre(FloatNear(3.965362e-4f, 1e-5), FloatNear(0.12289678f, 1e-5), FloatNear(-0.31302279f, 1e-5),
                            FloatNear(2.7412653f, 1e-5)));
    EXPECT_THAT(RunFloats(*s, "gx", {{"x", x}, {"n", Tensor::Scalar(0)}}), ElementsAre(1.4f, -2.6f));
    EXPECT_THAT(RunFloats(*s, "gm", {{"x", x}, {"n", Tensor::Scalar(40)}}),
                ElementsAre(FloatNear(-0.02090757f, 1e-5), FloatNear(0.24257593f, 1e-5), FloatNear(-0.4505461f, 1e-5),
                            FloatNear(5.237676f, 1e-5)));
    // An inner loop's gradient runs once per outer iteration, each with its own stacks.
    EXPECT_THAT(RunFloats(*s, "y", {{"s", Tensor::Scalar(0.8f)}}), ElementsAre(FloatNear(1.5497911f, 1e-5)));
    EXPECT_THAT(RunFloats(*s, "gs", {{"s", Tensor::Scalar(0.8f)}}), ElementsAre(FloatNear(2.6029148f, 1e-5)));
  }
}

TEST(ControlFlowTest, ConcurrentStepsKeepTheirOwnStacks) {
  auto s = Load("tf_while_gradient.pbtxt", 4);
  ASSERT_NE(s, nullptr);
  const Tensor x = Tensor::FromVector<float>({0.7f, -1.3f});
  const std::vector<float> at5 = RunFloats(*s, "gx", {{"x", x}});
  const std::vector<float> at40 = RunFloats(*s, "gx", {{"x", x}, {"n", Tensor::Scalar(40)}});
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 10; ++k) {
        const bool long_loop = (t + k) % 2 == 0;
        std::vector<float> g = long_loop ? RunFloats(*s, "gx", {{"x", x}, {"n", Tensor::Scalar(40)}})
                                         : RunFloats(*s, "gx", {{"x", x}});
        if (g != (long_loop ? at40 : at5)) ++wrong[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

// A stack outside any loop: pushes and pops in the order control edges give, and its errors
// name the node.
TEST(ControlFlowTest, StackOps) {
  auto make = [](int max_size) {
    const std::string text = R"({"nodes": [
      {"name": "max", "op": "Const", "attrs": {"dtype": "int32", "value": {"dtype": "int32", "shape": [], "data": [)" +
                             std::to_string(max_size) + R"(]}}},
      {"name": "st", "op": "StackV2", "inputs": ["max"], "attrs": {"elem_type": "float32"}},
      {"name": "a", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [], "data": [1]}}},
      {"name": "b", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [], "data": [2]}}},
      {"name": "p1", "op": "StackPushV2", "inputs": ["st", "a"]},
      {"name": "p2", "op": "StackPushV2", "inputs": ["st", "b", "^p1"]},
      {"name": "q1", "op": "StackPopV2", "inputs": ["st", "^p2"], "attrs": {"elem_type": "float32"}},
      {"name": "q2", "op": "StackPopV2", "inputs": ["st", "^q1"], "attrs": {"elem_type": "float32"}},
      {"name": "q3", "op": "StackPopV2", "inputs": ["st", "^q2"], "attrs": {"elem_type": "float32"}},
      {"name": "wrong", "op": "StackPopV2", "inputs": ["st", "^p2"], "attrs": {"elem_type": "int32"}},
      {"name": "close", "op": "StackCloseV2", "inputs": ["st", "^p2"]},
      {"name": "closed", "op": "StackPopV2", "inputs": ["st", "^close"], "attrs": {"elem_type": "float32"}}
    ]})";
    auto def = GraphSpecFromJson(text);
    EXPECT_TRUE(def.ok()) << def.status();
    auto s = Session::Create(SessionConfig(), *def);
    EXPECT_TRUE(s.ok()) << s.status();
    return std::move(*s);
  };
  auto s = make(-1);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {"q1", "q2"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 2);
  EXPECT_EQ(out[1].data<float>()[0], 1);
  // The next step runs its pushes and pops again, on a stack of its own.
  ASSERT_TRUE(s->Run({}, {"q1"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 2);
  Status st = s->Run({}, {"q3"}, {}, &out);
  EXPECT_THAT(st.message(), HasSubstr("is empty"));
  EXPECT_THAT(st.message(), HasSubstr("q3"));
  EXPECT_THAT(s->Run({}, {"wrong"}, {}, &out).message(), HasSubstr("Stack holds float32, the pop wants int32"));
  EXPECT_THAT(s->Run({}, {"closed"}, {}, &out).message(), HasSubstr("has already been closed"));
  st = make(1)->Run({}, {"q1"}, {}, &out);
  EXPECT_THAT(st.message(), HasSubstr("overflowed its max_size (1)"));
  EXPECT_THAT(st.message(), HasSubstr("p2"));
}

}  // namespace
}  // namespace tessera
