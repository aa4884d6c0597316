#include "placement/placer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "devices/cpu/cpu_provider.h"
#include "graph/builder/ops.h"
#include "graph/platform/logging.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

class NeverRuns : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
};

// CPU kernels for everything, GPU kernels like TensorFlow's for a subset: no int32
// VariableV2 or Add on the GPU.
class PlacerTest : public ::testing::Test {
 protected:
  PlacerTest() {
    RegisterCpuKernels(kernels_);
    for (const char* op : {"VariableV2"}) {
      kernels_.Register<NeverRuns>(KernelDefBuilder(op).Device(kDeviceGpu).TypeConstraint("dtype", {DataType::kFloat, DataType::kHalf}));
    }
    for (const char* op : {"Add", "MatMul", "Assign", "Identity", "Neg"}) {
      kernels_.Register<NeverRuns>(KernelDefBuilder(op).Device(kDeviceGpu).TypeConstraint<float>("T"));
    }
    kernels_.Register<NeverRuns>(KernelDefBuilder("Const").Device(kDeviceGpu));
    kernels_.Register<NeverRuns>(KernelDefBuilder("Shape").Device(kDeviceGpu).HostMemory("output"));
    for (const char* d : {"/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1",
                          "/job:localhost/replica:0/task:0/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:1"}) {
      // The priorities DeviceFactory gives the two types: GPU before CPU.
      EXPECT_TRUE(devices_.Add(d, std::string_view(d).find("GPU") != std::string_view::npos ? 210 : 100).ok());
    }
  }

  StatusOr<std::vector<PlacementRecord>> Place(const Scope& root, PlacerOptions options = {}) {
    GraphSpec def;
    RETURN_IF_ERROR(root.ToSpec(&def));
    ASSIGN_OR_RETURN(graph_, Graph::FromSpec(def));
    Placer placer(graph_.get(), devices_, options, &kernels_);
    return placer.Run();
  }

  const std::string& DeviceOf(std::string_view node) { return graph_->FindNode(node)->assigned_device(); }

  KernelRegistry kernels_;
  DeviceSet devices_;
  std::unique_ptr<Graph> graph_;
};

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr char kGpu0[] = "/job:localhost/replica:0/task:0/device:GPU:0";
constexpr char kGpu1[] = "/job:localhost/replica:0/task:0/device:GPU:1";

TEST_F(PlacerTest, DefaultPrefersGpuWhenItHasAKernel) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  auto i = ops::Placeholder(root.WithOpName("i"), DataType::kInt32);
  ops::Neg(root.WithOpName("f"), x);
  ops::Add(root.WithOpName("n"), i, i);
  auto records = Place(root);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(DeviceOf("f"), kGpu0);
  EXPECT_EQ(DeviceOf("n"), kCpu0);  // no int32 Add kernel on GPU
  EXPECT_EQ((*records)[graph_->FindNode("n")->id()].reason, PlacementReason::kDefault);
}

// A cluster's master places what asks for no device on its own task, even when another
// task's name sorts first; a GPU anywhere still comes before a CPU.
TEST(ClusterPlacementTest, TheLocalTaskComesFirstWithinADeviceType) {
  DeviceSet cluster;
  ASSERT_TRUE(cluster.Add("/job:ps/replica:0/task:0/device:CPU:0", 100, "", /*local=*/false).ok());
  ASSERT_TRUE(cluster.Add("/job:worker/replica:0/task:1/device:CPU:0", 100).ok());
  ASSERT_TRUE(cluster.Add("/job:worker/replica:0/task:2/device:GPU:0", 210, "", /*local=*/false).ok());
  std::vector<std::string> order;
  for (const DeviceDescription& d : cluster.devices()) order.push_back(d.name);
  EXPECT_EQ(order, (std::vector<std::string>{"/job:worker/replica:0/task:2/device:GPU:0",
                                             "/job:worker/replica:0/task:1/device:CPU:0",
                                             "/job:ps/replica:0/task:0/device:CPU:0"}));
  Scope root = Scope::NewRootScope();
  auto i = ops::Placeholder(root.WithOpName("i"), DataType::kInt32);
  ops::Add(root.WithOpName("n"), i, i);
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  auto graph = Graph::FromSpec(def);
  ASSERT_TRUE(graph.ok());
  KernelRegistry cpu_only;
  RegisterCpuKernels(cpu_only);
  Placer placer(graph->get(), cluster, {}, &cpu_only);
  ASSERT_TRUE(placer.Run().ok());
  EXPECT_EQ((*graph)->FindNode("n")->assigned_device(), "/job:worker/replica:0/task:1/device:CPU:0");
}

TEST_F(PlacerTest, RequestedDeviceWinsAndPartialSpecsMatch) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x").WithDevice("/cpu:1"), DataType::kFloat);
  ops::Neg(root.WithOpName("g").WithDevice("/device:GPU:1"), x);
  ops::Neg(root.WithOpName("any_gpu").WithDevice("/gpu:*"), x);
  ops::Neg(root.WithOpName("job").WithDevice("/job:localhost"), x);
  auto records = Place(root);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(DeviceOf("x"), kCpu1);
  EXPECT_EQ(DeviceOf("g"), kGpu1);
  EXPECT_EQ(DeviceOf("any_gpu"), kGpu0);
  EXPECT_EQ(DeviceOf("job"), kGpu0);
  EXPECT_EQ((*records)[graph_->FindNode("g")->id()].reason, PlacementReason::kRequested);
}

TEST_F(PlacerTest, Int32VariableOnGpuIsTheNoKernelError) {
  Scope root = Scope::NewRootScope();
  ops::Variable(root.WithOpName("v").WithDevice("/device:GPU:0"), TensorShape({2}), DataType::kInt32);
  auto records = Place(root);
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(records.status().message(),
              HasSubstr("Cannot assign a device for operation v: Could not satisfy explicit device "
                        "specification '/device:GPU:0' because no supported kernel for GPU devices "
                        "is available."));
  EXPECT_THAT(records.status().message(), HasSubstr("v (VariableV2, dtype=int32)"));
  EXPECT_THAT(records.status().message(), HasSubstr("Registered kernels: CPU, GPU {float16, float32}"));
}

TEST_F(PlacerTest, SoftPlacementFallsBackAndSaysWhy) {
  Scope root = Scope::NewRootScope();
  ops::Variable(root.WithOpName("v").WithDevice("/device:GPU:0"), TensorShape({2}), DataType::kInt32);
  auto records = Place(root, {.allow_soft_placement = true});
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(DeviceOf("v"), kCpu0);
  const PlacementRecord& r = (*records)[0];
  EXPECT_EQ(r.reason, PlacementReason::kSoftFallback);
  EXPECT_THAT(r.detail, HasSubstr("'/device:GPU:0'"));
  EXPECT_THAT(r.detail, HasSubstr("no supported kernel for GPU"));
}

TEST_F(PlacerTest, MissingDeviceIsAnErrorUnlessSoft) {
  Scope root = Scope::NewRootScope();
  ops::Variable(root.WithOpName("x").WithDevice("/gpu:7"), TensorShape({}), DataType::kFloat);
  auto hard = Place(root);
  ASSERT_FALSE(hard.ok());
  EXPECT_THAT(hard.status().message(), HasSubstr("no devices matching that specification are registered"));
  EXPECT_THAT(hard.status().message(), HasSubstr(kCpu1));
  auto soft = Place(root, {.allow_soft_placement = true});
  ASSERT_TRUE(soft.ok()) << soft.status();
  EXPECT_EQ(DeviceOf("x"), kGpu0);
}

TEST_F(PlacerTest, ReferenceEdgesColocateWithTheVariable) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v").WithDevice("/cpu:1"), TensorShape({2}), DataType::kFloat);
  ops::Assign(root.WithOpName("init"), v, Tensor::FromVector<float>({1, 2}));
  auto records = Place(root);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(DeviceOf("init"), kCpu1);
  const PlacementRecord& r = (*records)[graph_->FindNode("init")->id()];
  EXPECT_EQ(r.reason, PlacementReason::kColocated);
  EXPECT_THAT(r.detail, HasSubstr("'v'"));
}

TEST_F(PlacerTest, ConflictingColocationAndDeviceRequests) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v").WithDevice("/cpu:0"), TensorShape({}), DataType::kFloat);
  // ColocateWith clears device scopes (as tf.colocate_with), so the request comes after it.
  ops::Identity(root.ColocateWith(v).WithDevice("/cpu:1").WithOpName("r"), v);
  auto hard = Place(root);
  ASSERT_FALSE(hard.ok());
  EXPECT_THAT(hard.status().message(), HasSubstr("Cannot colocate nodes 'r' and 'v'"));
  EXPECT_THAT(hard.status().message(), HasSubstr("incompatible ids"));
  auto soft = Place(root, {.allow_soft_placement = true});
  ASSERT_TRUE(soft.ok()) << soft.status();
  EXPECT_EQ(DeviceOf("r"), DeviceOf("v"));
}

TEST_F(PlacerTest, ColocationWithUnknownNodeIsAnError) {
  GraphSpec def;
  NodeSpec n;
  n.name = "a";
  n.op = "NoOp";
  n.colocate_with = {"ghost"};
  def.nodes.push_back(n);
  auto g = Graph::FromSpec(def);
  ASSERT_TRUE(g.ok());
  Placer placer(g->get(), devices_, {}, &kernels_);
  EXPECT_THAT(placer.Run().status().message(), HasSubstr("'ghost', which is not in the graph"));
}

TEST_F(PlacerTest, AlreadyAssignedNodesKeepTheirDevice) {
  Scope root = Scope::NewRootScope();
  ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  auto g = Graph::FromSpec(def);
  ASSERT_TRUE(g.ok());
  (*g)->FindNode("x")->set_assigned_device(kCpu1);
  Placer placer(g->get(), devices_, {}, &kernels_);
  auto records = placer.Run();
  ASSERT_TRUE(records.ok());
  EXPECT_EQ((*records)[0].device, kCpu1);
  EXPECT_EQ((*records)[0].reason, PlacementReason::kAssigned);
}

TEST_F(PlacerTest, GeneratorsFollowConsumersAndMetadataFollowsInput) {
  Scope root = Scope::NewRootScope();
  auto c = ops::Const(root.WithOpName("c"), Tensor::Scalar(1.0f));
  auto n = ops::Neg(root.WithOpName("n").WithDevice("/cpu:1"), c);
  ops::Shape(root.WithOpName("shape"), n);
  auto shared = ops::Const(root.WithOpName("shared"), Tensor::Scalar(1.0f));
  ops::Neg(root.WithOpName("a").WithDevice("/cpu:0"), shared);
  ops::Neg(root.WithOpName("b").WithDevice("/cpu:1"), shared);
  auto records = Place(root);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(DeviceOf("c"), kCpu1);
  EXPECT_EQ((*records)[graph_->FindNode("c")->id()].reason, PlacementReason::kWithConsumers);
  EXPECT_EQ(DeviceOf("shape"), kCpu1);
  EXPECT_EQ(DeviceOf("shared"), kGpu0);  // consumers disagree: the default
}

TEST_F(PlacerTest, PassThroughIdentityFollowsItsInput) {
  Scope root = Scope::NewRootScope();
  // `a` requests nothing but lands on CPU:1 through colocation, like TF's case of an input
  // and a fetch that both request nothing.
  auto k = ops::Const(root.WithOpName("k").WithDevice("/cpu:1"), Tensor::Scalar(1.0f));
  auto a = ops::Neg(root.ColocateWith(k).WithOpName("a"), k);
  ops::Identity(root.WithOpName("fetched_only"), a);
  auto both = ops::Identity(root.WithOpName("two_consumers"), a);
  ops::Neg(root.WithOpName("c1"), both);
  ops::Neg(root.WithOpName("c2"), both);
  auto records = Place(root);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(DeviceOf("fetched_only"), kCpu1);
  EXPECT_EQ((*records)[graph_->FindNode("fetched_only")->id()].reason, PlacementReason::kWithInput);
  EXPECT_EQ(DeviceOf("two_consumers"), kGpu0);  // not a pass-through: the default
}

TEST_F(PlacerTest, DeviceFunctionReasonAndLogFormat) {
  struct Capture : LogSink {
    void Write(LogSeverity, std::string_view m) override { text += std::string(m) + "\n"; }
    std::string text;
  } sink;
  SetLogSink(&sink);
  Scope root = Scope::NewRootScope();
  Scope f = root.WithDeviceFunction([](const Node& n) {
    return n.op() == "VariableV2" ? std::string("/cpu:0") : std::string("/cpu:1");
  });
  auto v = ops::Variable(f.WithOpName("v"), TensorShape({}), DataType::kFloat);
  ops::Add(f.WithOpName("add"), v, v);
  auto records = Place(root, {.log_device_placement = true});
  SetLogSink(nullptr);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ((*records)[1].reason, PlacementReason::kFunction);
  EXPECT_THAT(sink.text, HasSubstr("Device mapping:\n"));
  EXPECT_THAT(sink.text, HasSubstr("add: (Add): /job:localhost/replica:0/task:0/device:CPU:1\n"));
  EXPECT_THAT(sink.text, HasSubstr("v: (VariableV2): /job:localhost/replica:0/task:0/device:CPU:0\n"));
}

TEST_F(PlacerTest, MalformedRequestNamesTheNode) {
  GraphSpec def;
  NodeSpec n;
  n.name = "a";
  n.op = "NoOp";
  n.device = "/gpu:abc";
  def.nodes.push_back(n);
  auto g = Graph::FromSpec(def);
  ASSERT_TRUE(g.ok());
  Placer placer(g->get(), devices_, {}, &kernels_);
  Status s = placer.Run().status();
  EXPECT_THAT(s.message(), HasSubstr("/gpu:abc"));
  EXPECT_THAT(s.message(), HasSubstr("'a' (NoOp)"));
}

}  // namespace
}  // namespace tessera
