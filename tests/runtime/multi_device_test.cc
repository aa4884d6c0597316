// Steps spread over several virtual CPU devices: values, errors, deadlines, all-reduce.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>

#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/test_ops.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Values;

std::string Cpu(int i) { return StrCat("/cpu:", i); }

SessionConfig Devices(int n) {
  SessionConfig c;
  c.device_count = {{"CPU", n}};
  c.constant_folding = false;  // what these graphs compute from constants must run in the step
  return c;
}

// A small model with fan-out, fan-in, a variable, a cross-device control dependency and
// two fetches; node k goes to device(k).
void BuildModel(const Scope& root, const std::function<std::string(int)>& device) {
  int k = 0;
  auto at = [&](const char* name) { return root.WithOpName(name).WithDevice(device(k++)); };
  auto x = ops::Placeholder(at("x"), DataType::kFloat, TensorShape({4, 3}));
  auto w = ops::Variable(at("w"), TensorShape({3, 5}), DataType::kFloat);
  ops::Assign(root.WithOpName("init").ColocateWith(w),
                          w, Tensor::FromVector<float>({0.5f, -1, 2, 0.25f, 3, 1, 1.5f, -2, 0, 4,
                                                        -0.5f, 2, 1, -1, 0.75f}, TensorShape({3, 5})));
  auto xw = ops::MatMul(at("xw"), x, w);
  auto r = ops::Relu(at("r"), xw);
  auto n = ops::Neg(at("n"), xw);
  auto sq = ops::Square(at("sq"), r);
  auto sum = ops::AddN(at("sum"), {sq, n, r});
  auto m = ops::Mean(at("m"), sum, {1});
  auto after = root.WithControlDependencies({m.op()});
  auto t = ops::Mul(after.WithOpName("t").WithDevice(device(k++)), r, 0.5f);
  ops::Sum(at("total"), ops::Add(at("both"), t, n), {0, 1});
}

std::vector<Tensor> RunModel(int num_devices, const std::function<std::string(int)>& device,
                             RunMetadata* metadata = nullptr) {
  Scope root = Scope::NewRootScope();
  BuildModel(root, device);
  auto session = testing::MakeSession(root, Devices(num_devices));
  std::vector<Tensor> out;
  EXPECT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  Tensor x = Tensor::FromVector<float>({1, 2, 3, -4, 5, 6, 0.5f, -1, 2, 3, 3, -3}, TensorShape({4, 3}));
  RunOptions options;
  options.output_partition_graphs = true;
  RunMetadata md;
  Status s = session->Run(options, {{"x", x}}, {"m", "total"}, {}, &out, &md);
  EXPECT_TRUE(s.ok()) << s;
  if (metadata != nullptr) *metadata = md;
  return out;
}

// Each device reports what its allocator holds: a 4 MiB Fill on cpu:1 shows in cpu:1's peak.
TEST(MultiDeviceTest, RunMetadataReportsEachDevicesAllocations) {
  Scope root = Scope::NewRootScope();
  auto big = ops::Fill(root.WithOpName("big").WithDevice(Cpu(1)), Tensor::FromVector<int32_t>({1 << 20}), 1.0f);
  auto small = ops::Sum(root.WithOpName("small").WithDevice(Cpu(0)), big, {0});
  auto session = testing::MakeSession(root, Devices(2));
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  RunMetadata md;
  Status s = session->Run(RunOptions(), {}, {small.name()}, {}, &out, &md);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(md.allocation_stats.size(), 2u);
  EXPECT_EQ(md.allocation_stats[0].device, "/job:localhost/replica:0/task:0/device:CPU:0");
  const DeviceAllocationStats& cpu1 = md.allocation_stats[1];
  EXPECT_EQ(cpu1.device, "/job:localhost/replica:0/task:0/device:CPU:1");
  EXPECT_FALSE(cpu1.allocator.empty());
  EXPECT_GE(cpu1.peak_bytes_in_use, int64_t{4} << 20);
  EXPECT_GE(cpu1.num_allocs, 1);
  EXPECT_LT(md.allocation_stats[0].peak_bytes_in_use, int64_t{4} << 20);
}

TEST(MultiDeviceTest, ValuesAcrossTwoThreeAndFourDevicesEqualOneDevice) {
  auto expected = RunModel(1, [](int) { return Cpu(0); });
  ASSERT_EQ(expected.size(), 2u);
  for (int devices : {2, 3, 4}) {
    RunMetadata md;
    auto got = RunModel(devices, [devices](int k) { return Cpu((k * 7 + 1) % devices); }, &md);
    ASSERT_EQ(got.size(), 2u);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(Values<float>(got[i]), Values<float>(expected[i])) << devices << " devices, fetch " << i;
    }
    EXPECT_EQ(static_cast<int>(md.partition_graphs.size()), devices);
    int sends = 0, recvs = 0;
    for (const GraphSpec& g : md.partition_graphs) {
      for (const NodeSpec& n : g.nodes) {
        sends += n.op == "_Send";
        recvs += n.op == "_Recv";
      }
    }
    EXPECT_GT(sends, 0);
    EXPECT_EQ(sends, recvs);
  }
}

TEST(MultiDeviceTest, ARemoteReadOfAVariableSeesItsValueWhenSent) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v").WithDevice(Cpu(0)), TensorShape({}), DataType::kFloat);
  ops::Assign(root.WithOpName("init").WithDevice(Cpu(0)), v, 1.0f);
  auto read = ops::Identity(root.WithOpName("read").WithDevice(Cpu(1)), v);
  ops::AssignAdd(root.WithOpName("inc").WithDevice(Cpu(0)).WithControlDependencies({read.op()}), v, 10.0f);
  auto session = testing::MakeSession(root, Devices(2));
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {"init"}, &out).ok());
  ASSERT_TRUE(session->Run({}, {"read", "inc"}, {}, &out).ok());
  EXPECT_EQ(out[0].flat<float>()[0], 1.0f);
  EXPECT_EQ(out[1].flat<float>()[0], 11.0f);
}

TEST(MultiDeviceTest, SameHostTransfersDoNotCopy) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x").WithDevice(Cpu(0)), DataType::kFloat);
  ops::Identity(root.WithOpName("y").WithDevice(Cpu(1)), ops::Identity(root.WithOpName("x0").WithDevice(Cpu(0)), x));
  auto session = testing::MakeSession(root, Devices(2));
  Tensor big(DataType::kFloat, TensorShape({1 << 16}));
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"x", big}}, {"y"}, {}, &out).ok());
  EXPECT_EQ(out[0].raw_data(), big.raw_data());
}

TEST(MultiDeviceTest, WaitingRecvsHoldNoThread) {
  // One inter-op thread, four devices, and a chain that visits them in turn: every device
  // but the first waits on Recvs before its input exists. A Recv blocking its thread would
  // deadlock the step.
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x").WithDevice(Cpu(0)), DataType::kFloat);
  for (int i = 1; i <= 24; ++i) x = ops::Add(root.WithDevice(Cpu(i % 4)), x, 1.0f);
  SessionConfig config = Devices(4);
  config.inter_op_parallelism_threads = 1;
  config.use_per_session_threads = true;
  config.operation_timeout_in_ms = 20000;
  auto session = testing::MakeSession(root, config);
  std::vector<Tensor> out;
  for (int step = 0; step < 20; ++step) {
    ASSERT_TRUE(session->Run({{"x", Tensor::Scalar(0.5f)}}, {x.name()}, {}, &out).ok());
    EXPECT_EQ(out[0].flat<float>()[0], 24.5f);
  }
}

NodeSpec TestNode(std::string name, std::string op, std::string device, std::vector<std::string> inputs = {}) {
  NodeSpec n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.device = std::move(device);
  n.inputs = std::move(inputs);
  return n;
}

TEST(MultiDeviceTest, AnErrorOnOneDeviceAbortsTheOthersAndIsReturned) {
  testing::RegisterTestOps();
  GraphSpec def;
  NodeSpec fail = TestNode("fail", "TestFail", Cpu(0));
  fail.attrs = {{"message", "boom on cpu 0"}};
  def.nodes.push_back(fail);
  NodeSpec c = TestNode("c", "Const", Cpu(1), {"^fail"});  // waits on a Recv from CPU:0
  c.attrs = {{"dtype", DataType::kFloat}, {"value", Tensor::Scalar(1.0f)}};
  def.nodes.push_back(c);
  def.nodes.push_back(TestNode("block", "TestBlock", Cpu(2)));  // waits for cancellation
  SessionConfig config = Devices(3);
  config.operation_timeout_in_ms = 20000;
  auto session = Session::Create(config, def);
  ASSERT_TRUE(session.ok()) << session.status();
  auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> out;
  Status s = (*session)->Run({}, {"c"}, {"block"}, &out);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("boom on cpu 0"));
  EXPECT_THAT(s.message(), HasSubstr("[[node fail (TestFail) on /job:localhost/replica:0/task:0/device:CPU:0]]"));
  EXPECT_LT(elapsed, std::chrono::seconds(10));  // well before the deadline
}

TEST(MultiDeviceTest, ADeadlineCancelsRecvsWaitingOnEveryDevice) {
  testing::RegisterTestOps();
  GraphSpec def;
  def.nodes.push_back(TestNode("block", "TestBlock", Cpu(0)));
  for (int d : {1, 2, 3}) {
    NodeSpec c = TestNode(StrCat("c", d), "Const", Cpu(d), {"^block"});
    c.attrs = {{"dtype", DataType::kFloat}, {"value", Tensor::Scalar(1.0f)}};
    def.nodes.push_back(c);
  }
  NodeSpec free = TestNode("free", "Const", Cpu(3));
  free.attrs = {{"dtype", DataType::kFloat}, {"value", Tensor::Scalar(2.0f)}};
  def.nodes.push_back(free);
  auto session = Session::Create(Devices(4), def);
  ASSERT_TRUE(session.ok()) << session.status();
  RunOptions options;
  options.timeout_in_ms = 100;
  std::vector<Tensor> out;
  RunMetadata md;
  Status s = (*session)->Run(options, {}, {"c1", "c2", "c3"}, {}, &out, &md);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  // The session stays usable.
  ASSERT_TRUE((*session)->Run({}, {"free"}, {}, &out).ok());
  EXPECT_EQ(out[0].flat<float>()[0], 2.0f);
}

// Device d's member of one all-reduce group reduces three fused inputs: a scalar, a
// vector shorter than the group and an odd-sized matrix.
template <typename T>
void CheckAllReduce(int devices, const std::string& reduction) {
  Scope root = Scope::NewRootScope();
  auto value = [](int d, int64_t i) { return static_cast<T>((i * 5 + d * 3) % 9 - 4 + d); };
  const std::vector<TensorShape> shapes = {TensorShape({}), TensorShape({devices - 1}), TensorShape({3, 37})};
  std::vector<std::string> fetches;
  for (int d = 0; d < devices; ++d) {
    Scope s = root.WithDevice(Cpu(d));
    std::vector<Input> inputs;
    for (size_t k = 0; k < shapes.size(); ++k) {
      Tensor t(DataTypeToEnum<T>::value, shapes[k]);
      for (int64_t i = 0; i < t.NumElements(); ++i) t.data<T>()[i] = value(d, i);
      inputs.push_back(ops::Const(s.WithOpName(StrCat("in", d, "_", k)), t));
    }
    auto out = ops::AllReduce(s.WithOpName(StrCat("r", d)), inputs,
                              {.reduction = reduction, .group_key = 1, .group_size = devices, .instance_key = 7});
    for (const Output& o : out) fetches.push_back(o.name());
  }
  auto session = testing::MakeSession(root, Devices(devices));
  std::vector<Tensor> got;
  Status st = session->Run({}, fetches, {}, &got);
  ASSERT_TRUE(st.ok()) << st;
  for (int d = 0; d < devices; ++d) {
    for (size_t k = 0; k < shapes.size(); ++k) {
      const Tensor& t = got[d * shapes.size() + k];
      ASSERT_EQ(t.shape(), shapes[k]);
      for (int64_t i = 0; i < t.NumElements(); ++i) {
        T want = value(0, i);
        for (int m = 1; m < devices; ++m) {
          T v = value(m, i);
          want = reduction == "max" ? std::max(want, v) : reduction == "min" ? std::min(want, v) : want + v;
        }
        if (reduction == "mean") want = static_cast<T>(want / static_cast<T>(devices));
        ASSERT_EQ(t.data<T>()[i], want) << reduction << " on " << devices << " devices, member " << d
                                         << " input " << k << " element " << i;
      }
    }
  }
}

TEST(MultiDeviceTest, AllReduceOfEveryReductionAndDtypeAcrossOneTwoThreeAndFourDevices) {
  // One device: a group of one, whose values pass through.
  for (int devices : {1, 2, 3, 4}) {
    for (const char* reduction : {"sum", "mean", "max", "min"}) {
      CheckAllReduce<float>(devices, reduction);
      CheckAllReduce<double>(devices, reduction);
      CheckAllReduce<int32_t>(devices, reduction);
    }
  }
}

TEST(MultiDeviceTest, AllReduceMembersWithDifferentShapesFailTheStepNotTheSession) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root.WithOpName("a").WithDevice(Cpu(0)), DataType::kFloat);
  auto b = ops::Placeholder(root.WithOpName("b").WithDevice(Cpu(1)), DataType::kFloat);
  auto ra = ops::AllReduce(root.WithOpName("ra").WithDevice(Cpu(0)), {a}, {.group_size = 2});
  auto rb = ops::AllReduce(root.WithOpName("rb").WithDevice(Cpu(1)), {b}, {.group_size = 2});
  SessionConfig config = Devices(2);
  config.operation_timeout_in_ms = 20000;
  auto session = testing::MakeSession(root, config);
  std::vector<Tensor> out;
  Status s = session->Run({{"a", Tensor::FromVector<float>({1, 2, 3})}, {"b", Tensor::FromVector<float>({1, 2})}},
                          {"ra", "rb"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("same dtype and shape"));
  ASSERT_TRUE(session->Run({{"a", Tensor::FromVector<float>({1, 2})}, {"b", Tensor::FromVector<float>({3, 4})}},
                           {"ra", "rb"}, {}, &out).ok());
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{4, 6}));
  EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{4, 6}));
}

TEST(MultiDeviceTest, AllReduceWithFloat16OnTheWireOfInt32IsRejected) {
  Scope root = Scope::NewRootScope();
  for (int d : {0, 1}) {
    auto x = ops::Const(root.WithOpName(StrCat("x", d)).WithDevice(Cpu(d)), Tensor::FromVector<int32_t>({1}));
    ops::AllReduce(root.WithOpName(StrCat("r", d)).WithDevice(Cpu(d)), {x}, {.group_size = 2, .wire_float16 = true});
  }
  auto session = testing::MakeSession(root, Devices(2));
  std::vector<Tensor> out;
  Status s = session->Run({}, {"r0", "r1"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("wire_float16"));
  EXPECT_THAT(s.message(), HasSubstr("r0"));
}

TEST(MultiDeviceTest, FetchingPartOfAnAllReduceGroupNamesTheMissingMembers) {
  Scope root = Scope::NewRootScope();
  for (int d : {0, 1, 2}) {
    auto x = ops::Const(root.WithOpName(StrCat("x", d)).WithDevice(Cpu(d)), Tensor::FromVector<float>({1}));
    ops::AllReduce(root.WithOpName(StrCat("r", d)).WithDevice(Cpu(d)), {x}, {.group_size = 3});
  }
  auto session = testing::MakeSession(root, Devices(3));
  std::vector<Tensor> out;
  Status s = session->Run({}, {"r0", "r2"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("group_size 3 but 2 member(s)"));
  ASSERT_TRUE(session->Run({}, {"r0", "r1", "r2"}, {}, &out).ok());
  EXPECT_EQ(Values<float>(out[2]), (std::vector<float>{3}));
}

}  // namespace
}  // namespace tessera
