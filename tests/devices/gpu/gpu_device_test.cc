// GPU devices: the factory, the config (device_count, visible_device_list, memory fraction,
// virtual devices), the log line, OOM messages, and a CUDA error failing only its step.
// The tests that need a GPU skip without one; the rest check what a machine without a GPU
// (or without a driver) does: no GPU device, and clear errors where a config or graph asks
// for one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>

#include "devices/gpu/gpu_device.h"
#include "devices/gpu/gpu_device_context.h"
#include "graph/builder/ops.h"
#include "kernels/kernel_registry.h"
#include "tests/captured_log.h"
#include "tests/devices/gpu/gpu_test_util.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

int CountGpus(const Session& session) {
  int n = 0;
  for (const Device* d : session.devices().devices()) n += d->device_type() == kDeviceGpu;
  return n;
}

StatusOr<std::unique_ptr<Session>> SessionFor(const Scope& root, const SessionConfig& config) {
  GraphSpec def;
  RETURN_IF_ERROR(root.ToSpec(&def));
  return Session::Create(config, def);
}

TEST(GpuDeviceTest, TheGpuFactoryRanksAboveTheCpu) {
  ASSERT_NE(DeviceFactory::Find(kDeviceGpu), nullptr);
  EXPECT_GT(DeviceFactory::Priority(kDeviceGpu), DeviceFactory::Priority(kDeviceCpu));
  EXPECT_EQ(DeviceFactory::Types().front(), kDeviceGpu);
}

TEST(GpuDeviceTest, EveryVisibleGpuIsADeviceAndNoneWithoutOne) {
  Scope root = Scope::NewRootScope();
  auto y = ops::Add(root, 1.0f, 2.0f);
  auto session = SessionFor(root, {});
  ASSERT_TRUE(session.ok()) << session.status();
  StatusOr<std::vector<PhysicalGpu>> gpus = ListPhysicalGpus();
  EXPECT_EQ(CountGpus(**session), gpus.ok() ? static_cast<int>(gpus->size()) : 0);
  EXPECT_FLOAT_EQ(testing::Fetch(**session, y.name()).data<float>()[0], 3.0f);
}

TEST(GpuDeviceTest, AVisibleDeviceListNamingAMissingGpuIsAClearError) {
  TESSERA_SKIP_WITHOUT_GPU();
  for (const char* list : {"7", "0,0"}) {
    SessionConfig config;
    config.gpu_options.visible_device_list = list;
    Scope root = Scope::NewRootScope();
    ops::Add(root, 1.0f, 2.0f);
    auto session = SessionFor(root, config);
    ASSERT_FALSE(session.ok()) << list;
    EXPECT_THAT(std::string(session.status().message()), HasSubstr("visible_device_list"));
  }
}

TEST(GpuDeviceTest, WithoutAGpuTheOptionsAreTakenAndAGraphAskingForOneNamesTheNode) {
  if (NoGpuReason().empty()) GTEST_SKIP() << "this machine has a GPU";
  Scope root = Scope::NewRootScope();
  auto y = ops::Add(root.WithDevice("/device:GPU:0").WithOpName("on_gpu"), 1.0f, 2.0f);
  SessionConfig config;
  config.gpu_options.visible_device_list = "1,0";
  config.gpu_options.virtual_device_memory_limit_mb = {{1024, 1024}};
  auto refused = SessionFor(root, config);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("on_gpu"));
  SessionConfig soft;
  soft.allow_soft_placement = true;
  auto moved = SessionFor(root, soft);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_FLOAT_EQ(testing::Fetch(**moved, y.name()).data<float>()[0], 3.0f);
}

TEST(GpuDeviceTest, CreatingADeviceLogsItsMemoryAndHardware) {
  TESSERA_SKIP_WITHOUT_GPU();
  testing::CapturedLog log;
  Scope root = Scope::NewRootScope();
  ops::Add(root, 1.0f, 2.0f);
  SessionConfig config;
  config.log_device_placement = true;
  auto session = SessionFor(root, config);
  ASSERT_TRUE(session.ok()) << session.status();
  const std::string text = log.text();
  EXPECT_THAT(text, HasSubstr("Created device /job:localhost/replica:0/task:0/device:GPU:0 with "));
  EXPECT_THAT(text, HasSubstr("MB memory -> physical GPU (device: 0, name: "));
  EXPECT_THAT(text, HasSubstr("compute capability: "));
  EXPECT_THAT(text, HasSubstr("/job:localhost/replica:0/task:0/device:GPU:0 -> device: 0, name: "));
}

TEST(GpuDeviceTest, DeviceCountCapsTheGpus) {
  TESSERA_SKIP_WITHOUT_GPU();
  SessionConfig config;
  config.device_count = {{"GPU", 0}};
  Scope root = Scope::NewRootScope();
  ops::Add(root, 1.0f, 2.0f);
  auto session = SessionFor(root, config);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(CountGpus(**session), 0);
}

TEST(GpuDeviceTest, RunMetadataReportsTheGpuAllocator) {
  TESSERA_SKIP_WITHOUT_GPU();
  Scope root = Scope::NewRootScope();
  auto big = ops::Fill(root.WithDevice("/device:GPU:0"), Tensor::FromVector<int32_t>({1 << 20}), 1.0f);
  auto sum = ops::Sum(root.WithDevice("/device:GPU:0"), big, {0});
  auto session = SessionFor(root, SessionConfig());
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  RunMetadata md;
  ASSERT_TRUE((*session)->Run(RunOptions(), {}, {sum.name()}, {}, &out, &md).ok());
  bool found = false;
  for (const DeviceAllocationStats& a : md.allocation_stats) {
    if (a.allocator != "GPU_0_bfc") continue;
    found = true;
    EXPECT_EQ(a.device, "/job:localhost/replica:0/task:0/device:GPU:0");
    EXPECT_GE(a.peak_bytes_in_use, int64_t{4} << 20);
    EXPECT_GT(a.bytes_limit, a.peak_bytes_in_use);
  }
  EXPECT_TRUE(found);
}

TEST(GpuDeviceTest, OutOfMemoryNamesTheNodeShapeAndDevice) {
  TESSERA_SKIP_WITHOUT_GPU();
  // 256 GiB, more than any GPU has: a process's first session fixes its GPUs' memory, so a
  // memory fraction set here would not hold when another test of this binary ran first.
  Scope root = Scope::NewRootScope();
  auto big = ops::Fill(root.WithDevice("/device:GPU:0").WithOpName("too_big"),
                       ops::Const(root, Tensor::FromVector<int32_t>({1 << 18, 1 << 18}, TensorShape({2}))), 1.0f);
  auto session = SessionFor(root, SessionConfig());
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  Status s = (*session)->Run({}, {big.name()}, {}, &out);
  ASSERT_EQ(s.code(), Code::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("too_big"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("OOM when allocating tensor with shape [262144,262144] and type float32 on "
                        "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(" in use (peak "));
  EXPECT_THAT(std::string(s.message()), HasSubstr("its largest free chunk is "));
}

TEST(GpuDeviceTest, TwoLogicalGpusOnOnePhysicalGpuRunAGraphSplitAcrossThem) {
  TESSERA_SKIP_WITHOUT_GPU();
  SessionConfig config;
  config.gpu_options.virtual_device_memory_limit_mb = {{1024, 1024}};
  Scope root = Scope::NewRootScope();
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  auto on0 = ops::Square(root.WithDevice("/device:GPU:0"), ops::Const(root, a));
  auto on1 = ops::MatMul(root.WithDevice("/device:GPU:1"), on0, ops::Const(root, a), {.transpose_b = true});
  auto session = SessionFor(root, config);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(CountGpus(**session), 2);
  Tensor r = testing::Fetch(**session, on1.name());
  // [[1,4,9],[16,25,36]] x [[1,2,3],[4,5,6]]^T
  EXPECT_THAT(testing::Values<float>(r), ::testing::ElementsAre(36, 78, 174, 405));
}

// A kernel whose CUDA call fails: an invalid argument, which leaves the GPU usable.
class CudaFaultOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto* gpu = GpuContextOf(ctx->device_context());
    OP_REQUIRES_OK(ctx, gpu->Activate());
    OP_REQUIRES_OK(ctx, CudaStatus(cudaMemsetAsync(nullptr, 0, 1 << 20, gpu->compute_stream()), "TestCudaFault"));
  }
};

TEST(GpuDeviceTest, ACudaErrorFailsOnlyItsStep) {
  TESSERA_SKIP_WITHOUT_GPU();
  static std::once_flag once;
  std::call_once(once, [] {
    (void)OpRegistry::Global()->Register(OpDefBuilder("TestCudaFault").SetIsStateful());
    KernelRegistry::Global()->Register<CudaFaultOp>(KernelDefBuilder("TestCudaFault").Device(kDeviceGpu));
  });
  Scope root = Scope::NewRootScope();
  Scope gpu = root.WithDevice("/device:GPU:0");
  NodeSpec fault_def;
  fault_def.op = "TestCudaFault";
  Operation fault(gpu.WithOpName("fault").AddNode(fault_def));
  auto y = ops::Mul(gpu, ops::Const(root, Tensor::Scalar(3.0f)), ops::Const(root, Tensor::Scalar(4.0f)));
  auto session = SessionFor(root, {});
  ASSERT_TRUE(session.ok()) << session.status();
  Status s = (*session)->Run({}, {}, {fault.name()}, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("CUDA error in TestCudaFault"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("fault"));
  EXPECT_FLOAT_EQ(testing::Fetch(**session, y.name()).data<float>()[0], 12.0f);
}

}  // namespace
}  // namespace tessera
