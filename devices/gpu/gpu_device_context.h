// GpuDeviceContext: one logical GPU's queues of work, as its kernels and copies use them.
// A compute stream runs the kernels in the order they were enqueued; separate host-to-device,
// device-to-host and device-to-device streams run copies beside it, each ordered after the
// compute stream's work by an event (the memory a copy writes may have been freed by a
// kernel still queued there). A copy's `done` runs when its bytes are in place, on this
// context's callback thread, never on a CUDA driver thread, so it may enqueue more work.
//
// The cuBLAS and cuDNN handles are bound to the compute stream; the calls through them are
// serialised, since a handle is not for concurrent use. All methods may be called
// concurrently from any thread.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "devices/gpu/cublas_library.h"
#include "kernels/device_context.h"

namespace tessera {

// InternalError naming `what` and CUDA's text for `err`; OK for success.
Status CudaStatus(cudaError_t err, std::string_view what);
Status CublasStatus(cublasStatus_t status, std::string_view what);
Status CudnnStatus(cudnnStatus_t status, std::string_view what);

class GpuDeviceContext;

// A step the calling thread is recording on one GPU (runtime/step_capture.h). Meanwhile,
// copies to that GPU go on its compute stream: from the step's fixed feed buffers in place,
// and from anything else through host copies the recording keeps, so that each replay
// copies the same bytes. Copies from it go on its compute stream into the pinned host
// tensor given (a fetch's fixed buffer), which each replay rewrites; copies between GPUs
// fail, since the other GPU's stream is not recorded.
struct GpuRecording {
  const GpuDeviceContext* gpu = nullptr;
  std::vector<const void*> fixed_inputs;  // read in place by each replay
  std::vector<Tensor> kept;
};
// The calling thread's recording, or nullptr; the recorder sets and clears it.
GpuRecording*& ThisThreadsGpuRecording();

class GpuDeviceContext final : public DeviceContext {
 public:
  // Streams, handles and a callback thread on the physical GPU `ordinal`. `allow_tf32` lets
  // cuBLAS and cuDNN use TF32 tensor cores for float32.
  static StatusOr<std::unique_ptr<GpuDeviceContext>> Create(int ordinal, bool allow_tf32);
  ~GpuDeviceContext() override;

  void* stream() const override { return compute_; }
  cudaStream_t compute_stream() const { return compute_; }
  cudaStream_t device_to_device_stream() const { return device_to_device_; }
  int ordinal() const { return ordinal_; }
  bool allow_tf32() const { return allow_tf32_; }

  // Makes this GPU current on the calling thread; every CUDA call for it comes after one.
  Status Activate() const;
  // Runs fn with the library and the handle, one caller at a time.
  Status WithCublas(const std::function<Status(const CublasLibrary&, cublasHandle_t)>& fn) const;
  Status WithCudnn(const std::function<Status(cudnnHandle_t)>& fn) const;
  // Runs `fn` on the callback thread once the work enqueued on `stream` so far is done.
  // An error means fn will not run.
  Status ThenExecute(cudaStream_t stream, std::function<void()> fn) const;
  // Blocks until the compute stream's work is done: never inside a step (a Const is copied
  // when its kernel is made; tests and benchmarks wait with it).
  Status Synchronize() const;

  // Calls done once the copy is enqueued: the compute stream waits for it, so the tensor
  // is ready for every kernel and copy that comes after on this GPU.
  void CopyHostToDevice(const Tensor& host, DeviceBase* device, Tensor* device_tensor,
                        StatusCallback done) const override;
  void CopyDeviceToHost(const Tensor& device_tensor, DeviceBase* device, Tensor* host,
                        StatusCallback done) const override;
  // GPU to GPU directly (peer copy, or within one physical GPU); to another type of device
  // through the host.
  void CopyDeviceToDevice(const Tensor& src, DeviceBase* src_device, DeviceBase* dst_device, Tensor* dst,
                          StatusCallback done) const override;

 private:
  GpuDeviceContext(int ordinal, bool allow_tf32);
  // Copies `bytes` on `copy_stream` once the work queued so far on this GPU's compute stream
  // (and on `other`'s, the peer's, when given) is done, then calls done.
  void Copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t copy_stream,
            const GpuDeviceContext* other, StatusCallback done) const;
  // The recorded forms of CopyHostToDevice and CopyDeviceToHost (GpuRecording).
  Status RecordCopyToDevice(const Tensor& host, DeviceBase* device, Tensor* device_tensor, GpuRecording* r) const;
  Status RecordCopyToHost(const Tensor& device_tensor, Tensor* host) const;
  bool Recording() const;
  static void RunOnCallbackThread(void* callback);
  void CallbackLoop();

  const int ordinal_;
  const bool allow_tf32_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t host_to_device_ = nullptr;
  cudaStream_t device_to_host_ = nullptr;
  cudaStream_t device_to_device_ = nullptr;
  const CublasLibrary* cublas_library_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  mutable std::mutex cublas_mu_;
  mutable std::mutex cudnn_mu_;

  mutable std::mutex callbacks_mu_;
  mutable std::condition_variable callbacks_cv_;
  mutable std::deque<std::function<void()>> callbacks_;  // guarded by callbacks_mu_
  bool stopping_ = false;                                // guarded by callbacks_mu_
  std::thread callback_thread_;
};

// The GpuDeviceContext of the device a GPU kernel runs on.
inline GpuDeviceContext* GpuContextOf(DeviceContext* context) { return static_cast<GpuDeviceContext*>(context); }

}  // namespace tessera
