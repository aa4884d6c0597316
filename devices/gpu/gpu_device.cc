#include "devices/gpu/gpu_device.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>

#include "devices/bfc_allocator.h"
#include "devices/gpu/gpu_device_context.h"
#include "devices/step_recording.h"
#include "graph/platform/logging.h"
#include "kernels/kernel_registry.h"

namespace tessera {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

class CudaMemory final : public SubAllocator {
 public:
  explicit CudaMemory(int ordinal) : ordinal_(ordinal) {}
  void* Alloc(size_t bytes) override {
    void* ptr = nullptr;
    if (cudaSetDevice(ordinal_) != cudaSuccess || cudaMalloc(&ptr, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky: clear it for the next kernel's check
      return nullptr;
    }
    return ptr;
  }
  void Free(void* ptr, size_t) override {
    cudaSetDevice(ordinal_);
    cudaFree(ptr);
  }

 private:
  const int ordinal_;
};

// Page-locked host memory, which copies reach by DMA without holding a host thread.
class PinnedMemory final : public SubAllocator {
 public:
  void* Alloc(size_t bytes) override {
    void* ptr = nullptr;
    if (cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return ptr;
  }
  void Free(void* ptr, size_t) override { cudaFreeHost(ptr); }
};

// TensorFlow's default share of a GPU: what is free, less a reserve for the driver and
// other processes' contexts.
size_t DefaultMemoryLimit(size_t free_bytes) {
  const size_t reserve = std::max<size_t>(300 * kMiB, free_bytes / 20);
  return free_bytes > reserve ? free_bytes - reserve : 0;
}

struct LogicalGpu {
  PhysicalGpu physical;
  size_t memory_limit = 0;
  std::shared_ptr<BFCAllocator> memory;
  std::unique_ptr<GpuDeviceContext> context;
};

// What outlives sessions: logical GPUs by (CUDA ordinal, virtual index), and pinned memory.
class GpuProcessState {
 public:
  static GpuProcessState& Get() {
    static auto* state = new GpuProcessState;  // never destroyed: tensors may outlive main's locals
    return *state;
  }

  // The logical GPU, made with these settings the first time it is asked for.
  StatusOr<LogicalGpu*> GetOrCreate(const PhysicalGpu& physical, int virtual_index, size_t memory_limit,
                                    bool allow_growth, bool allow_tf32) {
    std::lock_guard<std::mutex> lock(mu_);
    auto key = std::make_pair(physical.ordinal, virtual_index);
    auto it = logical_.find(key);
    if (it != logical_.end()) return it->second.get();
    auto gpu = std::make_unique<LogicalGpu>();
    gpu->physical = physical;
    gpu->memory_limit = memory_limit;
    BFCAllocator::Options options;
    options.name = StrCat("GPU_", physical.ordinal, "_bfc", virtual_index == 0 ? "" : StrCat("_", virtual_index));
    options.memory_limit = memory_limit;
    options.allow_growth = allow_growth;
    gpu->memory = std::make_shared<BFCAllocator>(std::make_unique<CudaMemory>(physical.ordinal), options);
    ASSIGN_OR_RETURN(gpu->context, GpuDeviceContext::Create(physical.ordinal, allow_tf32));
    LogicalGpu* raw = gpu.get();
    logical_.emplace(key, std::move(gpu));
    return raw;
  }

  std::shared_ptr<Allocator> pinned() {
    std::call_once(pinned_once_, [this] {
      BFCAllocator::Options options;
      options.name = "gpu_host_bfc";
      options.memory_limit = size_t{64} << 30;  // TensorFlow's cap on pinned memory
      options.allow_growth = true;
      pinned_ = std::make_shared<BFCAllocator>(std::make_unique<PinnedMemory>(), options);
      RegisterGpuCompatibleHostAllocator(pinned_);
    });
    return pinned_;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<int, int>, std::unique_ptr<LogicalGpu>> logical_;  // guarded by mu_
  std::once_flag pinned_once_;
  std::shared_ptr<Allocator> pinned_;
};

// The memory a step takes while it is recorded (step_capture.h): its replays reuse the same
// addresses, so what the step frees stays held until the recording is dropped. A buffer still
// in use then (a variable's new value) is freed by its user as usual.
class RecordingMemory final : public Allocator {
 public:
  explicit RecordingMemory(std::shared_ptr<Allocator> memory) : memory_(std::move(memory)) {}
  std::string_view name() const override { return memory_->name(); }
  void* AllocateRaw(size_t bytes) override { return memory_->AllocateRaw(bytes); }
  void DeallocateRaw(void* ptr, size_t bytes) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (holding_) {
        held_.emplace_back(ptr, bytes);
        return;
      }
    }
    memory_->DeallocateRaw(ptr, bytes);
  }
  AllocatorStats stats() const override { return memory_->stats(); }
  std::string DescribeLimit() const override { return memory_->DescribeLimit(); }

  // The recording is gone: what its replays used goes back. Later work that reuses it is
  // queued on the same compute stream, after the last replay.
  void Release() {
    std::vector<std::pair<void*, size_t>> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      holding_ = false;
      held.swap(held_);
    }
    for (auto [ptr, bytes] : held) memory_->DeallocateRaw(ptr, bytes);
  }

 private:
  const std::shared_ptr<Allocator> memory_;
  std::mutex mu_;
  bool holding_ = true;                             // guarded by mu_
  std::vector<std::pair<void*, size_t>> held_;      // guarded by mu_
};

class GpuDevice;
// The device whose step this thread is recording, and the memory its kernels get meanwhile.
thread_local const GpuDevice* t_recording_device = nullptr;
thread_local std::shared_ptr<RecordingMemory> t_recording_memory;

class GpuStepRecording final : public StepRecording {
 public:
  GpuStepRecording(const GpuDevice* device, GpuDeviceContext* gpu, std::shared_ptr<RecordingMemory> memory)
      : device_(device), gpu_(gpu), memory_(std::move(memory)) {
    copies_.gpu = gpu;
  }
  ~GpuStepRecording() override {
    // A replay may still be reading the host copies this frees; the recording is dropped
    // rarely (a variable moved, the session closed), so waiting for the GPU costs little.
    if (exec_ != nullptr && gpu_->Activate().ok()) {
      cudaStreamSynchronize(gpu_->compute_stream());
      cudaGraphExecDestroy(exec_);
    }
    memory_->Release();
  }

  Status Record(const std::function<Status()>& step, const std::vector<Tensor>& fixed_inputs) override {
    RETURN_IF_ERROR(gpu_->Activate());
    copies_.fixed_inputs.clear();
    for (const Tensor& t : fixed_inputs) copies_.fixed_inputs.push_back(t.raw_data());
    cudaStream_t stream = gpu_->compute_stream();
    // Relaxed: other threads may go on allocating device memory while this one records.
    RETURN_IF_ERROR(CudaStatus(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture"));
    t_recording_device = device_;
    t_recording_memory = memory_;
    ThisThreadsGpuRecording() = &copies_;
    Status s = step();
    ThisThreadsGpuRecording() = nullptr;
    t_recording_device = nullptr;
    t_recording_memory.reset();
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (ended != cudaSuccess) cudaGetLastError();  // a capture a kernel broke: its own error says why
    if (s.ok()) s = CudaStatus(ended, "recording the step (cudaStreamEndCapture)");
    if (s.ok()) s = CudaStatus(cudaGraphInstantiate(&exec_, graph, 0), "cudaGraphInstantiate");
    if (graph != nullptr) cudaGraphDestroy(graph);
    return s;
  }

  Status Replay() override {
    RETURN_IF_ERROR(gpu_->Activate());
    return CudaStatus(cudaGraphLaunch(exec_, gpu_->compute_stream()), "cudaGraphLaunch");
  }

  Status Wait() override { return gpu_->Synchronize(); }

 private:
  const GpuDevice* const device_;
  GpuDeviceContext* const gpu_;
  const std::shared_ptr<RecordingMemory> memory_;
  GpuRecording copies_;  // the host side of the copies into the GPU that the replays repeat
  cudaGraphExec_t exec_ = nullptr;
};

class GpuDevice final : public Device {
 public:
  GpuDevice(DeviceName name, std::shared_ptr<Allocator> memory, std::shared_ptr<Allocator> host_memory,
            ThreadPool* intra_op_pool, DeviceAttributes attributes, GpuDeviceContext* context)
      : Device(std::move(name), std::move(memory), std::move(host_memory), intra_op_pool, std::move(attributes)),
        context_(context) {}
  DeviceContext* device_context() const override { return context_; }
  std::shared_ptr<Allocator> allocator() const override {
    if (t_recording_device == this) return t_recording_memory;
    return Device::allocator();
  }
  StatusOr<std::unique_ptr<StepRecording>> NewStepRecording() override {
    return std::unique_ptr<StepRecording>(
        std::make_unique<GpuStepRecording>(this, context_, std::make_shared<RecordingMemory>(Device::allocator())));
  }

 private:
  GpuDeviceContext* const context_;  // owned by GpuProcessState
};

// The visible GPUs in the order gpu_options list them: all when the list is empty.
StatusOr<std::vector<int>> VisibleOrder(const GpuOptions& options, int num_visible) {
  ASSIGN_OR_RETURN(std::vector<int> order, options.VisibleDevices());
  if (order.empty()) {
    for (int i = 0; i < num_visible; ++i) order.push_back(i);
  }
  for (int index : order) {
    if (index >= num_visible) {
      return errors::InvalidArgument("gpu_options.visible_device_list '", options.visible_device_list, "' names GPU ",
                                     index, ", but only GPUs 0 to ", num_visible - 1,
                                     " are visible to this process (after CUDA_VISIBLE_DEVICES)");
    }
  }
  return order;
}

class GpuDeviceFactory final : public DeviceFactory {
 public:
  int DefaultCount() const override { return INT_MAX; }

  StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(const DeviceCreationParams& p) override {
    const GpuOptions& options = p.gpu_options;
    std::vector<std::unique_ptr<Device>> devices;
    StatusOr<std::vector<PhysicalGpu>> gpus = ListPhysicalGpus();
    // No driver or no GPU: no GPU device, whatever the options say (a graph that asks for a
    // GPU then fails to place, naming the node).
    if (!gpus.ok() || gpus->empty()) return devices;
    ASSIGN_OR_RETURN(std::vector<int> order, VisibleOrder(options, static_cast<int>(gpus->size())));
    if (options.virtual_device_memory_limit_mb.size() > order.size()) {
      return errors::InvalidArgument("gpu_options.experimental.virtual_devices has ",
                                     options.virtual_device_memory_limit_mb.size(), " entries, but ", order.size(),
                                     " GPUs are visible");
    }
    for (size_t v = 0; v < order.size(); ++v) {
      const PhysicalGpu& physical = (*gpus)[order[v]];
      std::vector<size_t> limits;
      if (v < options.virtual_device_memory_limit_mb.size() && !options.virtual_device_memory_limit_mb[v].empty()) {
        for (double mb : options.virtual_device_memory_limit_mb[v]) limits.push_back(static_cast<size_t>(mb * kMiB));
      } else {
        ASSIGN_OR_RETURN(size_t limit, MemoryLimit(physical, options));
        const int k = std::max(1, options.virtual_devices_per_gpu);
        limits.assign(k, limit / k);
      }
      for (size_t k = 0; k < limits.size() && static_cast<int>(devices.size()) < p.count; ++k) {
        ASSIGN_OR_RETURN(LogicalGpu * gpu,
                         GpuProcessState::Get().GetOrCreate(physical, static_cast<int>(k), limits[k],
                                                            options.allow_growth, options.allow_tf32));
        DeviceName name = DeviceName::Full(p.job, p.replica, p.task, kDeviceGpu, static_cast<int>(devices.size()));
        DeviceAttributes attributes;
        attributes.physical_device_desc = physical.Description();
        attributes.memory_limit = static_cast<int64_t>(gpu->memory_limit);
        Log(LogSeverity::kInfo, StrCat("Created device ", name.ToString(), " with ", gpu->memory_limit / kMiB,
                                       " MB memory -> physical GPU (", attributes.physical_device_desc, ")"));
        auto host_memory = std::make_shared<TrackingAllocator>(StrCat(name.ToString(), " host"),
                                                               GpuProcessState::Get().pinned(), p.host_memory);
        devices.push_back(std::make_unique<GpuDevice>(name, gpu->memory, std::move(host_memory), p.intra_op_pool,
                                                      std::move(attributes), gpu->context.get()));
      }
    }
    return devices;
  }

 private:
  static StatusOr<size_t> MemoryLimit(const PhysicalGpu& gpu, const GpuOptions& options) {
    if (options.per_process_gpu_memory_fraction > 0) {
      return static_cast<size_t>(options.per_process_gpu_memory_fraction * static_cast<double>(gpu.total_memory));
    }
    size_t free_bytes = 0, total_bytes = 0;
    RETURN_IF_ERROR(CudaStatus(cudaSetDevice(gpu.ordinal), "cudaSetDevice"));
    RETURN_IF_ERROR(CudaStatus(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
    return DefaultMemoryLimit(free_bytes);
  }
};

}  // namespace

std::string PhysicalGpu::Description() const {
  return StrCat("device: ", ordinal, ", name: ", name, ", pci bus id: ", pci_bus_id,
                ", compute capability: ", compute_capability_major, ".", compute_capability_minor);
}

StatusOr<std::vector<PhysicalGpu>> ListPhysicalGpus() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  std::vector<PhysicalGpu> gpus;
  if (err == cudaErrorNoDevice) {
    cudaGetLastError();
    return gpus;
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    return errors::FailedPrecondition("No usable CUDA driver: ", cudaGetErrorName(err), ": ", cudaGetErrorString(err));
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&prop, i), "cudaGetDeviceProperties"));
    char bus_id[32] = {};
    RETURN_IF_ERROR(CudaStatus(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, i), "cudaDeviceGetPCIBusId"));
    PhysicalGpu gpu;
    gpu.ordinal = i;
    gpu.name = prop.name;
    gpu.pci_bus_id = bus_id;
    gpu.compute_capability_major = prop.major;
    gpu.compute_capability_minor = prop.minor;
    gpu.total_memory = prop.totalGlobalMem;
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

std::unique_ptr<DeviceFactory> NewGpuDeviceFactory() { return std::make_unique<GpuDeviceFactory>(); }

}  // namespace tessera
