// The device seams through a fake accelerator: a device type registered from outside the
// runtime (DeviceFactory), with memory of its own (an allocator that knows its buffers), a
// DeviceContext whose copies finish on a thread of their own, kernels registered for it,
// and int32 kept in host memory as a GPU keeps it. Its kernels check that every input is
// in the memory the registry promised, so a missing or misplaced copy fails the step.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "devices/device_factory.h"
#include "graph/builder/ops.h"
#include "kernels/common/common_kernels.h"
#include "kernels/copy_tensor.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

constexpr char kFake[] = "FAKE";

// Host memory standing in for a device's: it remembers which buffers are its own.
class FakeMemory final : public Allocator {
 public:
  std::string_view name() const override { return "fake_device_memory"; }
  void* AllocateRaw(size_t bytes) override {
    void* p = CpuAllocator()->AllocateRaw(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    if (p != nullptr) mine_.insert(p);
    return p;
  }
  void DeallocateRaw(void* p, size_t bytes) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      mine_.erase(p);
    }
    CpuAllocator()->DeallocateRaw(p, bytes);
  }
  bool Owns(const Tensor& t) const {
    std::lock_guard<std::mutex> lock(mu_);
    return mine_.count(t.raw_data()) != 0;
  }

 private:
  mutable std::mutex mu_;
  std::set<const void*> mine_;
};

FakeMemory& Memory() {
  static auto* memory = new FakeMemory;
  return *memory;
}
std::shared_ptr<Allocator> MemoryHandle() {
  static std::shared_ptr<Allocator> handle(&Memory(), [](Allocator*) {});
  return handle;
}

// Copies on a thread of their own, as a DMA engine finishes them.
class FakeContext final : public DeviceContext {
 public:
  FakeContext() : thread_([this] { Loop(); }) {}
  ~FakeContext() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void* stream() const override { return const_cast<FakeContext*>(this); }
  void CopyHostToDevice(const Tensor& host, DeviceBase*, Tensor* device_tensor, StatusCallback done) const override {
    Enqueue(host, device_tensor, !Memory().Owns(host) && Memory().Owns(*device_tensor), &to_device, std::move(done));
  }
  void CopyDeviceToHost(const Tensor& device_tensor, DeviceBase*, Tensor* host, StatusCallback done) const override {
    Enqueue(device_tensor, host, Memory().Owns(device_tensor) && !Memory().Owns(*host), &to_host, std::move(done));
  }
  void CopyDeviceToDevice(const Tensor& src, DeviceBase* src_device, DeviceBase* dst_device, Tensor* dst,
                          StatusCallback done) const override {
    ++between_devices;
    DeviceContext::CopyDeviceToDevice(src, src_device, dst_device, dst, std::move(done));
  }

  mutable std::atomic<int> to_device{0}, to_host{0}, between_devices{0}, on_caller_thread{0}, misplaced{0};

 private:
  void Enqueue(const Tensor& from, Tensor* to, bool memories_right, std::atomic<int>* counter,
               StatusCallback done) const {
    if (!memories_right) ++misplaced;
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back([from, to, counter, done = std::move(done), this] {
      if (std::this_thread::get_id() != thread_.get_id()) ++on_caller_thread;
      std::memcpy(to->raw_data(), from.raw_data(), from.TotalBytes());
      ++*counter;
      done(Status::OK());
    });
    cv_.notify_all();
  }
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto work = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      work();
      lock.lock();
    }
  }

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

FakeContext& Context() {
  static auto* context = new FakeContext;
  return *context;
}

class FakeDevice final : public Device {
 public:
  using Device::Device;
  DeviceContext* device_context() const override { return &Context(); }
};

class FakeFactory final : public DeviceFactory {
 public:
  StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(const DeviceCreationParams& p) override {
    std::vector<std::unique_ptr<Device>> devices;
    for (int i = 0; i < p.count; ++i) {
      DeviceName name = DeviceName::Full(p.job, p.replica, p.task, kFake, i);
      auto host = std::make_shared<TrackingAllocator>(name.ToString() + "/host", CpuAllocator(), p.host_memory);
      devices.push_back(std::make_unique<FakeDevice>(name, MemoryHandle(), host, p.intra_op_pool));
    }
    return devices;
  }
};

// Fails the kernel unless input i is in the memory its kernel declared.
Status CheckInputMemory(OpKernelContext* ctx, int i) {
  const bool on_device = Memory().Owns(ctx->input(i));
  const bool want_device = ctx->op_kernel().input_memory_type(i) == MemoryType::kDevice;
  if (on_device == want_device) return Status::OK();
  return errors::Internal("input ", i, " of ", ctx->op_kernel().name(), " is in ",
                          on_device ? "device" : "host", " memory");
}

class FakeAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, CheckInputMemory(ctx, 0));
    OP_REQUIRES_OK(ctx, CheckInputMemory(ctx, 1));
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    OP_REQUIRES(ctx, a.shape() == b.shape(), errors::InvalidArgument("FAKE Add needs equal shapes"));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, a.shape(), &out));
    for (int64_t i = 0; i < a.NumElements(); ++i) out->data<float>()[i] = a.data<float>()[i] + b.data<float>()[i];
  }
};

// Reads its shape on the host, as a GPU's Reshape does.
class FakeReshapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, CheckInputMemory(ctx, 0));
    OP_REQUIRES_OK(ctx, CheckInputMemory(ctx, 1));
    StatusOr<TensorShape> shape = TensorShape::Make(IntTensorValues(ctx->input(1)));
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    std::memcpy(out->raw_data(), ctx->input(0).raw_data(), ctx->input(0).TotalBytes());
  }
};

// Writes its int32 output into device memory, so a host-memory consumer on the same device
// needs a copy.
class FakeShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const TensorShape& in = ctx->input(0).shape();
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({in.rank()}), &out));
    for (int i = 0; i < in.rank(); ++i) out->data<int32_t>()[i] = static_cast<int32_t>(in.dim(i));
  }
};

void RegisterFakeDevice() {
  static std::once_flag once;
  std::call_once(once, [] {
    ASSERT_TRUE(DeviceFactory::Register(kFake, 300, std::make_unique<FakeFactory>()).ok());
    KernelRegistry& r = *KernelRegistry::Global();
    RegisterRuntimeKernelsWithOwnMemory(r, kFake, {DataType::kInt32});
    r.Register<FakeAddOp>(KernelDefBuilder("Add").Device(kFake).TypeConstraint<float>("T"));
    r.Register<FakeReshapeOp>(KernelDefBuilder("Reshape").Device(kFake).TypeConstraint<float>("T").HostMemory("shape"));
    r.Register<FakeShapeOp>(KernelDefBuilder("Shape").Device(kFake).TypeConstraint<float>("T"));
  });
}

class FakeDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterFakeDevice(); }
};

Tensor Floats(std::vector<float> v, TensorShape shape) {
  Tensor t(DataType::kFloat, shape);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

TEST_F(FakeDeviceTest, FactoryOrdersTypesAndCreatesDevices) {
  std::vector<std::string> types = DeviceFactory::Types();
  ASSERT_GE(types.size(), 2u);
  EXPECT_EQ(types[0], kFake);  // priority 300 before the CPU's 100
  EXPECT_EQ(DeviceFactory::Priority(kFake), 300);
  EXPECT_EQ(DeviceFactory::Priority("NOPE"), 0);
  EXPECT_EQ(DeviceFactory::Register(kFake, 1, std::make_unique<FakeFactory>()).code(), Code::kAlreadyExists);

  auto pool = ThreadPool::Create("t", 1);
  ASSERT_TRUE(pool.ok());
  auto mgr = DeviceMgr::CreateLocal({{"CPU", 1}, {kFake, 2}}, pool->get(), int64_t{1} << 30);
  ASSERT_TRUE(mgr.ok()) << mgr.status();
  ASSERT_EQ((*mgr)->devices().size(), 3u);
  EXPECT_TRUE((*mgr)->Lookup("/device:FAKE:1").ok());
  DeviceSet set = (*mgr)->AsDeviceSet();
  EXPECT_EQ(set.devices()[0].type, kFake);

  auto unknown = DeviceMgr::CreateLocal({{"XPU", 1}}, pool->get(), int64_t{1} << 30);
  EXPECT_EQ(unknown.status().code(), Code::kInvalidArgument);
  // Types by priority; a CUDA build has GPU between the two.
  EXPECT_NE(unknown.status().message().find("this build has FAKE, "), std::string::npos) << unknown.status();
  EXPECT_NE(unknown.status().message().find(", CPU"), std::string::npos) << unknown.status();
}

TEST_F(FakeDeviceTest, RegistryKnowsWhichArgumentsStayOnTheHost) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, Floats({1, 2, 3, 4}, TensorShape({4})));
  ops::Reshape(root.WithOpName("r"), x, ops::Const(root, Tensor::FromVector<int32_t>({2, 2})));
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  auto g = Graph::FromSpec(def);
  ASSERT_TRUE(g.ok());
  std::vector<MemoryType> in, out;
  const KernelRegistry& reg = *KernelRegistry::Global();
  ASSERT_TRUE(reg.MemoryTypesForNode(*(*g)->FindNode("r"), kFake, &in, &out).ok());
  EXPECT_EQ(in, (std::vector<MemoryType>{MemoryType::kDevice, MemoryType::kHost}));
  EXPECT_EQ(out, (std::vector<MemoryType>{MemoryType::kDevice}));
  ASSERT_TRUE(reg.MemoryTypesForNode(*(*g)->FindNode("r"), kDeviceCpu, &in, &out).ok());
  EXPECT_EQ(in, (std::vector<MemoryType>{MemoryType::kDevice, MemoryType::kDevice}));
  EXPECT_TRUE(reg.HasHostMemoryArgs(kFake));
  EXPECT_FALSE(reg.HasHostMemoryArgs(kDeviceCpu));
}

// Feeds and constants go to the device, a tensor crosses from one fake device to the other
// and to the CPU, a shape stays on the host, and a device-memory shape feeding a host-memory
// argument on the same device is copied down: every path a copy can take.
TEST_F(FakeDeviceTest, RunsAMultiDeviceGraphThroughItsCopies) {
  Scope root = Scope::NewRootScope();
  Scope fake0 = root.WithDevice("/device:FAKE:0");
  Scope fake1 = root.WithDevice("/device:FAKE:1");
  Scope cpu = root.WithDevice("/device:CPU:0");
  auto x = ops::Placeholder(fake0.WithOpName("x"), DataType::kFloat);
  auto c = ops::Const(cpu.WithOpName("c"), Floats({10, 20, 30, 40, 50, 60}, TensorShape({2, 3})));
  auto sum = ops::Add(root.WithOpName("sum"), x, c);  // no request: FAKE outranks the CPU
  auto shape = ops::Const(cpu.WithOpName("shape"), Tensor::FromVector<int32_t>({3, 2}));
  auto r = ops::Reshape(fake0.WithOpName("r"), sum, shape);
  auto twice = ops::Add(fake1.WithOpName("twice"), r, r);
  ops::Neg(cpu.WithOpName("neg"), twice);
  ops::Reshape(fake1.WithOpName("same"), twice, ops::Shape(fake1.WithOpName("s"), twice));
  auto n = ops::Placeholder(fake0.WithOpName("n"), DataType::kInt32);
  ops::Identity(fake0.WithOpName("n_out"), n);

  SessionConfig config;
  config.device_count = {{"CPU", 1}, {kFake, 2}};
  auto session = testing::MakeSession(root, config);
  ASSERT_NE(session, nullptr);
  for (const PlacementRecord& p : session->placement()) {
    if (p.node == "sum") {
      EXPECT_EQ(p.device, "/job:localhost/replica:0/task:0/device:FAKE:0");
    }
  }

  FakeContext& ctx = Context();
  const int to_device = ctx.to_device, to_host = ctx.to_host, between = ctx.between_devices;
  RunOptions options;
  options.output_partition_graphs = true;
  RunMetadata metadata;
  std::vector<Tensor> out;
  Status s = session->Run(options,
                          {{"x", Floats({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}))},
                           {"n", Tensor::FromVector<int32_t>({7, 8})}},
                          {"neg", "twice", "same", "n_out"}, {}, &out, &metadata);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out[0].shape(), TensorShape({3, 2}));
  EXPECT_EQ(testing::Values<float>(out[0]), (std::vector<float>{-22, -44, -66, -88, -110, -132}));
  EXPECT_EQ(testing::Values<float>(out[1]), (std::vector<float>{22, 44, 66, 88, 110, 132}));
  EXPECT_EQ(out[2].shape(), TensorShape({3, 2}));
  EXPECT_EQ(testing::Values<int32_t>(out[3]), (std::vector<int32_t>{7, 8}));
  for (const Tensor& t : out) EXPECT_FALSE(Memory().Owns(t)) << "a fetch must come back in host memory";

  // x and c in; r across devices; twice out for neg and for the fetch, and down for s.
  EXPECT_GE(ctx.to_device - to_device, 3);
  EXPECT_GE(ctx.to_host - to_host, 3);
  EXPECT_EQ(ctx.between_devices - between, 1);
  EXPECT_EQ(ctx.on_caller_thread, 0);
  EXPECT_EQ(ctx.misplaced, 0);

  // The int32 shape reached FAKE:0 in host memory; `s` went from device to host memory on
  // FAKE:1 through a pair of that device's own.
  int host_recvs = 0, same_device_pairs = 0;
  for (const GraphSpec& part : metadata.partition_graphs) {
    for (const NodeSpec& node : part.nodes) {
      if (node.op != "_HostRecv") continue;
      ++host_recvs;
      std::string from;
      ASSERT_TRUE(GetAttr(node.attrs, node.name, "send_device", &from).ok());
      same_device_pairs += from == node.device;
    }
  }
  EXPECT_GE(host_recvs, 2);
  EXPECT_EQ(same_device_pairs, 1);
}

TEST_F(FakeDeviceTest, StringsStayInHostMemory) {
  auto pool = ThreadPool::Create("t", 1);
  ASSERT_TRUE(pool.ok());
  auto mgr = DeviceMgr::CreateLocal({{kFake, 1}}, pool->get(), int64_t{1} << 30);
  ASSERT_TRUE(mgr.ok());
  Device* fake = *(*mgr)->Lookup("/device:FAKE:0");
  Status status;
  CopyTensor(Tensor::FromVector<std::string>({"a"}), nullptr, {}, fake, {},
             [&](const Status& s, Tensor) { status = s; });
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("FAKE:0"), std::string::npos) << status;
}

}  // namespace
}  // namespace tessera
