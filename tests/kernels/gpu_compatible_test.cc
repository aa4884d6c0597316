// A CPU kernel's output that a _Send to a GPU reads is made in the host memory GPUs copy
// from directly (TensorFlow's gpu_compatible allocations); where no GPU has registered that
// memory, and for every other output, it is plain host memory. Runs without a GPU: a
// stand-in allocator is registered, as the first GPU device registers its pinned one.
#include <gtest/gtest.h>

#include "graph/allocator.h"
#include "graph/graph.h"
#include "kernels/kernel_registry.h"
#include "kernels/thread_pool.h"
#include "runtime/device_mgr.h"

namespace tessera {
namespace {

constexpr const char* kCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";

NodeSpec Const(const std::string& name) {
  NodeSpec d;
  d.name = name;
  d.op = "Const";
  d.device = kCpu0;
  const Tensor value = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({4}));
  d.attrs["dtype"] = value.dtype();
  d.attrs["value"] = value;
  return d;
}

NodeSpec Send(const std::string& name, const std::string& input, const std::string& recv_device) {
  NodeSpec d;
  d.name = name;
  d.op = "_Send";
  d.inputs = {input};
  d.device = kCpu0;
  d.attrs["T"] = DataType::kFloat;
  d.attrs["tensor_name"] = std::string("edge_") + input;
  d.attrs["send_device"] = std::string(kCpu0);
  d.attrs["send_device_incarnation"] = int64_t{1};
  d.attrs["recv_device"] = recv_device;
  return d;
}

TEST(GpuCompatibleTest, OutputsHeadedToAGpuUseTheMemoryAGpuRegistered) {
  GraphSpec def;
  def.nodes = {Const("to_gpu"), Const("to_cpu"), Send("send_gpu", "to_gpu", "/job:localhost/replica:0/task:0/device:GPU:0"),
               Send("send_cpu", "to_cpu", "/job:localhost/replica:0/task:0/device:CPU:1")};
  StatusOr<std::unique_ptr<Graph>> g = Graph::FromSpec(def);
  ASSERT_TRUE(g.ok()) << g.status();
  StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create("intra_op", 1);
  ASSERT_TRUE(pool.ok());
  StatusOr<std::unique_ptr<DeviceMgr>> devices =
      DeviceMgr::CreateLocal({{"CPU", 1}, {"GPU", 0}}, pool->get(), int64_t{1} << 30);
  ASSERT_TRUE(devices.ok()) << devices.status();
  Device* cpu = (*devices)->devices().at(0);
  auto kernel = [&](const char* name) {
    StatusOr<std::unique_ptr<OpKernel>> k = KernelRegistry::Global()->CreateKernel(*(*g)->FindNode(name), cpu);
    EXPECT_TRUE(k.ok()) << k.status();
    return k.ok() ? std::move(*k) : nullptr;
  };
  ASSERT_NE(kernel("to_gpu"), nullptr);
  EXPECT_TRUE(kernel("to_gpu")->output_gpu_compatible(0));
  EXPECT_FALSE(kernel("to_cpu")->output_gpu_compatible(0));

  // No GPU has registered its memory: plain host memory.
  ASSERT_EQ(GpuCompatibleHostAllocator(), nullptr);
  EXPECT_EQ(cpu->GetAllocator({.gpu_compatible = true}), cpu->allocator());

  auto pinned = std::make_shared<TrackingAllocator>("pinned stand-in", CpuAllocator());
  RegisterGpuCompatibleHostAllocator(pinned);
  EXPECT_EQ(cpu->GetAllocator({.gpu_compatible = true}), pinned);
  EXPECT_EQ(cpu->GetAllocator({}), cpu->allocator());
  // A Const headed to a GPU keeps its value there; one that is not, where it was.
  std::unique_ptr<OpKernel> to_cpu = kernel("to_cpu");
  EXPECT_EQ(pinned->stats().bytes_in_use, 0);
  std::unique_ptr<OpKernel> to_gpu = kernel("to_gpu");
  EXPECT_GE(pinned->stats().bytes_in_use, static_cast<int64_t>(4 * sizeof(float)));
  to_gpu.reset();
  EXPECT_EQ(pinned->stats().bytes_in_use, 0);
}

}  // namespace
}  // namespace tessera
