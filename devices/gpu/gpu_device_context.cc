#include "devices/gpu/gpu_device_context.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/device_base.h"
#include "kernels/thread_pool.h"

namespace tessera {

Status CudaStatus(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return Status::OK();
  // Reset the thread's last error, so that the next launch's check does not report this one
  // (an error that poisons the context stays, and is reported again).
  cudaGetLastError();
  return errors::Internal("CUDA error in ", what, ": ", cudaGetErrorName(err), ": ", cudaGetErrorString(err));
}

Status CublasStatus(cublasStatus_t status, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::OK();
  StatusOr<const CublasLibrary*> cublas = LoadCublas();
  if (!cublas.ok()) return errors::Internal("cuBLAS error in ", what, ": status ", static_cast<int>(status));
  return errors::Internal("cuBLAS error in ", what, ": ", (*cublas)->status_name(status), ": ",
                          (*cublas)->status_string(status));
}

Status CudnnStatus(cudnnStatus_t status, std::string_view what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::OK();
  return errors::Internal("cuDNN error in ", what, ": ", cudnnGetErrorString(status));
}

namespace {

// Makes `waiter` wait for the work queued so far on `producer`, a stream of GPU
// `producer_ordinal`, without blocking the host. Leaves GPU `waiter_ordinal` current.
Status StreamWaitFor(cudaStream_t waiter, int waiter_ordinal, cudaStream_t producer, int producer_ordinal) {
  // An event is recorded on a stream of the GPU current when it was made.
  RETURN_IF_ERROR(CudaStatus(cudaSetDevice(producer_ordinal), "cudaSetDevice"));
  cudaEvent_t event;
  RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate"));
  Status s = CudaStatus(cudaEventRecord(event, producer), "cudaEventRecord");
  if (s.ok()) s = CudaStatus(cudaSetDevice(waiter_ordinal), "cudaSetDevice");
  if (s.ok()) s = CudaStatus(cudaStreamWaitEvent(waiter, event, 0), "cudaStreamWaitEvent");
  // Released by the driver once the event has happened.
  cudaEventDestroy(event);
  return s;
}

// Whether the driver can copy from and to `ptr` without staging it (pinned host memory or
// device memory): a copy from pageable memory blocks the calling thread.
bool IsPinnedOrDevice(const void* ptr) {
  cudaPointerAttributes attributes;
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    cudaGetLastError();  // not sticky; clear it so the next kernel's check does not see it
    return false;
  }
  return attributes.type != cudaMemoryTypeUnregistered;
}

struct PendingCallback {
  const GpuDeviceContext* context;
  std::function<void()> fn;
};

}  // namespace

StatusOr<std::unique_ptr<GpuDeviceContext>> GpuDeviceContext::Create(int ordinal, bool allow_tf32) {
  std::unique_ptr<GpuDeviceContext> c(new GpuDeviceContext(ordinal, allow_tf32));
  RETURN_IF_ERROR(c->Activate());
  for (cudaStream_t* s : {&c->compute_, &c->host_to_device_, &c->device_to_host_, &c->device_to_device_}) {
    RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), "cudaStreamCreate"));
  }
  ASSIGN_OR_RETURN(c->cublas_library_, LoadCublas());
  const CublasLibrary& cublas = *c->cublas_library_;
  RETURN_IF_ERROR(CublasStatus(cublas.create(&c->cublas_), "cublasCreate"));
  RETURN_IF_ERROR(CublasStatus(cublas.set_stream(c->cublas_, c->compute_), "cublasSetStream"));
  // TensorFlow 1.x computes float32 in float32; TF32 only when the config allows it.
  RETURN_IF_ERROR(
      CublasStatus(cublas.set_math_mode(c->cublas_, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                   "cublasSetMathMode"));
  RETURN_IF_ERROR(CudnnStatus(cudnnCreate(&c->cudnn_), "cudnnCreate"));
  RETURN_IF_ERROR(CudnnStatus(cudnnSetStream(c->cudnn_, c->compute_), "cudnnSetStream"));
  return c;
}

GpuDeviceContext::GpuDeviceContext(int ordinal, bool allow_tf32)
    : ordinal_(ordinal), allow_tf32_(allow_tf32), callback_thread_([this] { CallbackLoop(); }) {}

GpuDeviceContext::~GpuDeviceContext() {
  if (Activate().ok()) {
    for (cudaStream_t s : {compute_, host_to_device_, device_to_host_, device_to_device_}) {
      if (s != nullptr) cudaStreamSynchronize(s);
    }
  }
  {
    std::lock_guard<std::mutex> lock(callbacks_mu_);
    stopping_ = true;
  }
  callbacks_cv_.notify_all();
  callback_thread_.join();
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  if (cublas_ != nullptr) cublas_library_->destroy(cublas_);
  for (cudaStream_t s : {compute_, host_to_device_, device_to_host_, device_to_device_}) {
    if (s != nullptr) cudaStreamDestroy(s);
  }
}

Status GpuDeviceContext::Activate() const { return CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice"); }

Status GpuDeviceContext::WithCublas(const std::function<Status(const CublasLibrary&, cublasHandle_t)>& fn) const {
  std::lock_guard<std::mutex> lock(cublas_mu_);
  return fn(*cublas_library_, cublas_);
}

Status GpuDeviceContext::WithCudnn(const std::function<Status(cudnnHandle_t)>& fn) const {
  std::lock_guard<std::mutex> lock(cudnn_mu_);
  return fn(cudnn_);
}

Status GpuDeviceContext::Synchronize() const {
  RETURN_IF_ERROR(Activate());
  return CudaStatus(cudaStreamSynchronize(compute_), "cudaStreamSynchronize");
}

void GpuDeviceContext::RunOnCallbackThread(void* arg) {
  // On a CUDA driver thread, which must not call CUDA: hand the callback over.
  std::unique_ptr<PendingCallback> callback(static_cast<PendingCallback*>(arg));
  const GpuDeviceContext* c = callback->context;
  {
    std::lock_guard<std::mutex> lock(c->callbacks_mu_);
    c->callbacks_.push_back(std::move(callback->fn));
  }
  c->callbacks_cv_.notify_one();
}

Status GpuDeviceContext::ThenExecute(cudaStream_t stream, std::function<void()> fn) const {
  auto* callback = new PendingCallback{this, std::move(fn)};
  Status s =
      CudaStatus(cudaLaunchHostFunc(stream, &GpuDeviceContext::RunOnCallbackThread, callback), "cudaLaunchHostFunc");
  if (!s.ok()) delete callback;
  return s;
}

void GpuDeviceContext::CallbackLoop() {
  // Callbacks enqueue the next kernels; those activate their own GPU, this is the common case.
  cudaSetDevice(ordinal_);
  std::unique_lock<std::mutex> lock(callbacks_mu_);
  while (true) {
    callbacks_cv_.wait(lock, [&] { return stopping_ || !callbacks_.empty(); });
    if (callbacks_.empty()) return;
    std::function<void()> fn = std::move(callbacks_.front());
    callbacks_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
}

void GpuDeviceContext::Copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t copy_stream,
                            const GpuDeviceContext* other, StatusCallback done) const {
  if (bytes == 0) {
    done(Status::OK());
    return;
  }
  if (Recording() || (other != nullptr && other->Recording())) {
    done(errors::FailedPrecondition("A step that copies a tensor between GPUs cannot be recorded"));
    return;
  }
  Status s = [&]() -> Status {
    RETURN_IF_ERROR(Activate());
    RETURN_IF_ERROR(StreamWaitFor(copy_stream, ordinal_, compute_, ordinal_));
    if (other != nullptr) RETURN_IF_ERROR(StreamWaitFor(copy_stream, ordinal_, other->compute_, other->ordinal_));
    if (other != nullptr && other->ordinal_ != ordinal_) {
      RETURN_IF_ERROR(CudaStatus(cudaMemcpyPeerAsync(dst, other->ordinal_, src, ordinal_, bytes, copy_stream),
                                 "cudaMemcpyPeerAsync"));
    } else {
      RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(dst, src, bytes, kind, copy_stream), "cudaMemcpyAsync"));
    }
    return ThenExecute(copy_stream, [done] { done(Status::OK()); });
  }();
  if (!s.ok()) done(s);
}

// The tensor is ready as soon as its copy is enqueued: the compute stream, which every use
// of this GPU's memory is ordered after, waits for the copy. So no consumer waits on the
// host for a copy to the GPU (a step would stall at each one while the GPU drained), and
// only the source, staged or pinned, is held until the copy is done.
GpuRecording*& ThisThreadsGpuRecording() {
  thread_local GpuRecording* recording = nullptr;
  return recording;
}

bool GpuDeviceContext::Recording() const {
  const GpuRecording* r = ThisThreadsGpuRecording();
  return r != nullptr && r->gpu == this;
}

Status GpuDeviceContext::RecordCopyToDevice(const Tensor& host, DeviceBase* device, Tensor* device_tensor,
                                            GpuRecording* r) const {
  Tensor kept = host;
  if (std::find(r->fixed_inputs.begin(), r->fixed_inputs.end(), host.raw_data()) == r->fixed_inputs.end()) {
    ASSIGN_OR_RETURN(kept, host.DeepCopy(device->host_allocator()));
  } else if (!IsPinnedOrDevice(host.raw_data())) {
    return errors::FailedPrecondition("A recorded step's feed must be in pinned host memory");
  }
  r->kept.push_back(kept);
  RETURN_IF_ERROR(Activate());
  return CudaStatus(
      cudaMemcpyAsync(device_tensor->raw_data(), kept.raw_data(), host.TotalBytes(), cudaMemcpyHostToDevice, compute_),
      "cudaMemcpyAsync");
}

void GpuDeviceContext::CopyHostToDevice(const Tensor& host, DeviceBase* device, Tensor* device_tensor,
                                        StatusCallback done) const {
  const size_t bytes = host.TotalBytes();
  if (bytes == 0) {
    done(Status::OK());
    return;
  }
  if (Recording()) {
    done(RecordCopyToDevice(host, device, device_tensor, ThisThreadsGpuRecording()));
    return;
  }
  Status s = [&]() -> Status {
    RETURN_IF_ERROR(Activate());
    // The destination's memory may have been freed by a kernel still queued.
    RETURN_IF_ERROR(StreamWaitFor(host_to_device_, ordinal_, compute_, ordinal_));
    auto* to = static_cast<char*>(device_tensor->raw_data());
    Tensor source = host;
    if (IsPinnedOrDevice(host.raw_data())) {
      RETURN_IF_ERROR(
          CudaStatus(cudaMemcpyAsync(to, host.raw_data(), bytes, cudaMemcpyHostToDevice, host_to_device_),
                     "cudaMemcpyAsync"));
    } else {
      // Pageable memory: staged in pinned memory, so the copy never holds this thread. A
      // large buffer is staged in chunks on the intra-op pool, each chunk's copy enqueued as
      // soon as it is staged: the copy engine works while the rest is staged, and one
      // thread's memcpy (a tenth of the engine's rate) does not bound the transfer.
      ASSIGN_OR_RETURN(source, Tensor::Allocate(device->host_allocator(), host.dtype(), host.shape()));
      constexpr size_t kChunk = size_t{1} << 20;
      const auto* from = static_cast<const char*>(host.raw_data());
      auto* stage = static_cast<char*>(source.raw_data());
      const int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
      std::vector<cudaError_t> errors(chunks, cudaSuccess);
      auto stage_chunks = [&](int64_t begin, int64_t end) {
        cudaSetDevice(ordinal_);
        for (int64_t c = begin; c < end; ++c) {
          const size_t offset = static_cast<size_t>(c) * kChunk, n = std::min(kChunk, bytes - offset);
          std::memcpy(stage + offset, from + offset, n);
          errors[c] = cudaMemcpyAsync(to + offset, stage + offset, n, cudaMemcpyHostToDevice, host_to_device_);
        }
      };
      ThreadPool* pool = device->intra_op_pool();
      if (pool != nullptr && chunks > 1) {
        pool->ParallelFor(chunks, /*cost_per_unit=*/kChunk, stage_chunks);
      } else {
        stage_chunks(0, chunks);
      }
      RETURN_IF_ERROR(Activate());
      for (cudaError_t e : errors) RETURN_IF_ERROR(CudaStatus(e, "cudaMemcpyAsync"));
    }
    RETURN_IF_ERROR(StreamWaitFor(compute_, ordinal_, host_to_device_, ordinal_));
    return ThenExecute(host_to_device_, [source] {});
  }();
  done(s);
}

Status GpuDeviceContext::RecordCopyToHost(const Tensor& device_tensor, Tensor* host) const {
  if (!IsPinnedOrDevice(host->raw_data())) {
    return errors::FailedPrecondition("A recorded step copies out of a GPU only into pinned host memory");
  }
  RETURN_IF_ERROR(Activate());
  return CudaStatus(cudaMemcpyAsync(host->raw_data(), device_tensor.raw_data(), device_tensor.TotalBytes(),
                                    cudaMemcpyDeviceToHost, compute_),
                    "cudaMemcpyAsync");
}

void GpuDeviceContext::CopyDeviceToHost(const Tensor& device_tensor, DeviceBase* device, Tensor* host,
                                        StatusCallback done) const {
  const size_t bytes = device_tensor.TotalBytes();
  if (bytes > 0 && Recording()) {
    done(RecordCopyToHost(device_tensor, host));
    return;
  }
  if (bytes == 0 || IsPinnedOrDevice(host->raw_data())) {
    Copy(host->raw_data(), device_tensor.raw_data(), bytes, cudaMemcpyDeviceToHost, device_to_host_, nullptr,
         std::move(done));
    return;
  }
  StatusOr<Tensor> staging = Tensor::Allocate(device->host_allocator(), device_tensor.dtype(), device_tensor.shape());
  if (!staging.ok()) {
    done(staging.status());
    return;
  }
  auto pinned = std::make_shared<Tensor>(std::move(*staging));
  Copy(pinned->raw_data(), device_tensor.raw_data(), bytes, cudaMemcpyDeviceToHost, device_to_host_, nullptr,
       [pinned, host, bytes, done = std::move(done)](const Status& s) {
         if (s.ok()) std::memcpy(host->raw_data(), pinned->raw_data(), bytes);
         done(s);
       });
}

void GpuDeviceContext::CopyDeviceToDevice(const Tensor& src, DeviceBase* src_device, DeviceBase* dst_device,
                                          Tensor* dst, StatusCallback done) const {
  auto* peer = dynamic_cast<const GpuDeviceContext*>(dst_device->device_context());
  if (peer == nullptr) {
    DeviceContext::CopyDeviceToDevice(src, src_device, dst_device, dst, std::move(done));
    return;
  }
  // The destination's memory may have been freed by a kernel still queued on its GPU's
  // compute stream, so the copy waits for that stream too.
  Copy(dst->raw_data(), src.raw_data(), src.TotalBytes(), cudaMemcpyDeviceToDevice, device_to_device_, peer,
       std::move(done));
}

}  // namespace tessera
