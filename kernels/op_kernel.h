// OpKernel: what an op DOES on one device type. The executor creates one kernel per node
// when it is built and calls Compute (or ComputeAsync) once per step with an
// OpKernelContext holding that step's inputs and receiving its outputs.
//
//   class NegOp : public OpKernel {
//    public:
//     using OpKernel::OpKernel;
//     void Compute(OpKernelContext* ctx) override {
//       const Tensor& x = ctx->input(0);
//       Tensor* y;
//       OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
//       ...
//     }
//   };
//
// Compute may run concurrently for different steps, so a kernel keeps no per-step state in
// members; what it computes once (attrs, constants) it reads in its constructor.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "kernels/device_base.h"
#include "kernels/rendezvous.h"
#include "kernels/resource_mgr.h"

namespace tessera {

class Variable;
class OpKernelContext;
class AsyncOpKernel;
class FunctionRuntime;

// One input or output slot: a value, or a reference to a variable (VariableV2's output,
// Assign's first input). A consumer that wants a value gets the variable's current value
// when it runs, as TensorFlow 1.x reference edges behave.
struct TensorValue {
  Tensor tensor;
  std::shared_ptr<Variable> ref;
  const std::string* ref_name = nullptr;  // the variable's node, for "uninitialized value" errors
};

// Where a step's feeds come from and its fetches go (_Arg and _Retval kernels).
// Implementations are called concurrently from the kernels of one step.
class CallFrame {
 public:
  virtual ~CallFrame() = default;
  virtual StatusOr<Tensor> GetArg(int index) const = 0;
  virtual Status SetRetval(int index, const Tensor& value) = 0;
};

class OpKernelConstruction {
 public:
  // The memory types are one per input and output (allocator_attributes.h); empty means
  // every argument lives in device memory.
  OpKernelConstruction(const Node& node, DeviceBase* device, std::vector<MemoryType> input_memory_types = {},
                       std::vector<MemoryType> output_memory_types = {})
      : node_(node),
        device_(device),
        input_memory_types_(std::move(input_memory_types)),
        output_memory_types_(std::move(output_memory_types)) {}

  const Node& node() const { return node_; }
  DeviceBase* device() const { return device_; }
  const std::vector<MemoryType>& input_memory_types() const { return input_memory_types_; }
  const std::vector<MemoryType>& output_memory_types() const { return output_memory_types_; }
  template <typename T>
  Status GetAttr(std::string_view name, T* out) const {
    return node_.GetAttr(name, out);
  }
  void SetStatus(const Status& s) {
    if (status_.ok()) status_ = s;
  }
  const Status& status() const { return status_; }

 private:
  const Node& node_;
  DeviceBase* device_;
  std::vector<MemoryType> input_memory_types_;
  std::vector<MemoryType> output_memory_types_;
  Status status_;
};

class OpKernel {
 public:
  explicit OpKernel(OpKernelConstruction* c);
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  virtual void Compute(OpKernelContext* ctx) = 0;
  // Cheap kernels run inline on the thread that made them ready; expensive ones may be
  // handed to another inter-op thread.
  virtual bool IsExpensive() const { return true; }
  virtual AsyncOpKernel* AsAsync() { return nullptr; }

  const std::string& name() const { return name_; }
  const std::string& type_string() const { return type_; }
  const std::string& device_name() const { return device_; }
  int num_inputs() const { return static_cast<int>(input_types_.size()); }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }
  bool input_is_ref(int i) const { return input_is_ref_[i]; }
  bool output_is_ref(int i) const { return output_is_ref_[i]; }
  // Where argument i lives: host memory when the kernel declared it HostMemory.
  MemoryType input_memory_type(int i) const {
    return input_memory_types_.empty() ? MemoryType::kDevice : input_memory_types_[i];
  }
  MemoryType output_memory_type(int i) const {
    return output_memory_types_.empty() ? MemoryType::kDevice : output_memory_types_[i];
  }
  // Whether output i goes to a GPU (a _Send to one reads it): then it is allocated where
  // the GPU copies from directly.
  bool output_gpu_compatible(int i) const { return output_gpu_compatible_[i]; }

 private:
  const std::string name_;
  const std::string type_;
  const std::string device_;
  const std::vector<DataType> input_types_;
  const std::vector<DataType> output_types_;
  const std::vector<bool> input_is_ref_;
  const std::vector<bool> output_is_ref_;
  // Empty when every argument is in device memory, as on the CPU.
  const std::vector<MemoryType> input_memory_types_;
  const std::vector<MemoryType> output_memory_types_;
  const std::vector<bool> output_gpu_compatible_;
};

// A kernel that finishes later (waiting for a queue, a remote tensor) without holding an
// inter-op thread: it calls `done` exactly once, from any thread.
class AsyncOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  using DoneCallback = std::function<void()>;
  virtual void ComputeAsync(OpKernelContext* ctx, DoneCallback done) = 0;
  AsyncOpKernel* AsAsync() override { return this; }
  // Runs ComputeAsync and blocks until done, for callers outside the executor.
  void Compute(OpKernelContext* ctx) final;
};

// Lets async kernels learn that their step was aborted. Register returns false when the
// step is already cancelled (the callback is not stored). Thread-safe.
class CancellationManager {
 public:
  using Token = int64_t;
  Token NewToken();
  bool RegisterCallback(Token token, std::function<void()> callback);
  // Returns false if the callback already ran or is running.
  bool DeregisterCallback(Token token);
  void StartCancel();
  // Lock-free, for kernels that check between chunks of work.
  bool IsCancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mu_;
  std::atomic<bool> cancelled_{false};  // written under mu_
  Token next_ = 0;          // guarded by mu_
  std::map<Token, std::function<void()>> callbacks_;  // guarded by mu_
};

// The loop frame and iteration a kernel runs in; {0, 0} outside every loop. A frame's id
// is derived from its name and its parents' iterations, so it is the same on every device
// of the step, and a cross-device key can name it.
struct FrameAndIter {
  uint64_t frame_id = 0;
  int64_t iter_id = 0;
};

class OpKernelContext {
 public:
  // Everything the executor hands a kernel for one step; all pointers are borrowed.
  struct Params {
    OpKernel* kernel = nullptr;
    DeviceBase* device = nullptr;
    ResourceMgr* resource_mgr = nullptr;
    ResourceMgr* step_resource_mgr = nullptr;  // what lives for this step only
    CallFrame* call_frame = nullptr;
    CancellationManager* cancellation = nullptr;
    Rendezvous* rendezvous = nullptr;  // where this step's tensors cross devices
    const FunctionRuntime* function_runtime = nullptr;
    ThreadPool* intra_op_pool = nullptr;  // nullptr: the device's
    int64_t step_id = 0;
    FrameAndIter frame_iter;
    TensorValue* inputs = nullptr;   // num_inputs entries, values already dereferenced
    TensorValue* outputs = nullptr;  // num_outputs entries, cleared
  };
  explicit OpKernelContext(const Params& params) : p_(params) {}

  OpKernel& op_kernel() const { return *p_.kernel; }
  int num_inputs() const { return p_.kernel->num_inputs(); }
  int num_outputs() const { return p_.kernel->num_outputs(); }
  const Tensor& input(int i) const { return p_.inputs[i].tensor; }
  // The variable behind a reference input. Precondition: the input is a reference.
  Variable* input_ref(int i) const { return p_.inputs[i].ref.get(); }
  const std::string& input_ref_name(int i) const { return *p_.inputs[i].ref_name; }

  // From the memory output i lives in (its kernel's HostMemory declarations).
  Status allocate_output(int i, const TensorShape& shape, Tensor** out);
  // Gives output i the buffer of input `in` when nothing else holds it and dtype and
  // shape allow, else allocates; the kernel then writes the output (possibly in place).
  Status forward_input_or_allocate_output(int in, int i, const TensorShape& shape, Tensor** out);
  // Gives output i input `in`'s buffer seen with `shape`, from the input's first element
  // (room its producer reserved past its end: Tensor::Resized), when nothing else holds it
  // and it has the room; the input's elements keep their places. False, changing nothing,
  // otherwise.
  bool forward_input_resized(int in, int i, const TensorShape& shape, Tensor** out);
  Status allocate_temp(DataType dtype, const TensorShape& shape, Tensor* out, AllocatorAttributes attr = {});
  AllocatorAttributes input_alloc_attr(int i) const {
    return AllocatorAttributes::For(p_.kernel->input_memory_type(i));
  }
  AllocatorAttributes output_alloc_attr(int i) const {
    AllocatorAttributes attr = AllocatorAttributes::For(p_.kernel->output_memory_type(i));
    attr.gpu_compatible = p_.kernel->output_gpu_compatible(i);
    return attr;
  }
  void set_output(int i, Tensor t) { p_.outputs[i].tensor = std::move(t); }
  // `name` must outlive the step (a kernel's own name does).
  void set_output_ref(int i, std::shared_ptr<Variable> var, const std::string* name) {
    p_.outputs[i].ref = std::move(var);
    p_.outputs[i].ref_name = name;
  }
  // The ref output is the same variable as the ref input.
  void forward_ref_input_to_ref_output(int in, int out) { p_.outputs[out] = p_.inputs[in]; }

  DeviceBase* device() const { return p_.device; }
  // nullptr on a device whose memory is the host's (device_context.h).
  DeviceContext* device_context() const { return p_.device->device_context(); }
  // The device's pool, or the one the executor was given for all its kernels.
  ThreadPool* intra_op_pool() const {
    return p_.intra_op_pool != nullptr ? p_.intra_op_pool : p_.device->intra_op_pool();
  }
  ResourceMgr* resource_manager() const { return p_.resource_mgr; }
  // Resources dropped when the step ends (TensorFlow's step container: the stacks of a while
  // loop's gradient); nullptr where the caller gave none.
  ResourceMgr* step_resource_manager() const { return p_.step_resource_mgr; }
  CallFrame* call_frame() const { return p_.call_frame; }
  CancellationManager* cancellation_manager() const { return p_.cancellation; }
  // True once the step is cancelled (its deadline passed, another node failed). A kernel
  // that works for long checks it between chunks and stops.
  bool IsCancelled() const { return p_.cancellation != nullptr && p_.cancellation->IsCancelled(); }
  // The intra-op pool's ParallelFor, cut into pieces of a few milliseconds each; once the
  // step is cancelled the pieces left are skipped and the kernel's status is Cancelled.
  void ParallelFor(int64_t total, int64_t cost_per_unit, const std::function<void(int64_t, int64_t)>& fn);
  // nullptr when the step has no cross-device traffic to carry.
  Rendezvous* rendezvous() const { return p_.rendezvous; }
  // Runs the bodies of function attrs; nullptr outside an executor.
  const FunctionRuntime* function_runtime() const { return p_.function_runtime; }
  int64_t step_id() const { return p_.step_id; }
  const FrameAndIter& frame_iter() const { return p_.frame_iter; }

  void SetStatus(const Status& s) {
    if (status_.ok()) status_ = s;
  }
  const Status& status() const { return status_; }

 private:
  Params p_;
  Status status_;
};

#define OP_REQUIRES(ctx, cond, status) \
  do {                                 \
    if (!(cond)) {                     \
      (ctx)->SetStatus(status);        \
      return;                          \
    }                                  \
  } while (0)

#define OP_REQUIRES_OK(ctx, expr)                 \
  do {                                            \
    ::tessera::Status _tessera_op_status = (expr); \
    if (!_tessera_op_status.ok()) {               \
      (ctx)->SetStatus(_tessera_op_status);       \
      return;                                     \
    }                                             \
  } while (0)

// The same in AsyncOpKernel::ComputeAsync, which must call `done` on every path out.
#define OP_REQUIRES_ASYNC(ctx, cond, status, done) \
  do {                                             \
    if (!(cond)) {                                 \
      (ctx)->SetStatus(status);                    \
      (done)();                                    \
      return;                                      \
    }                                              \
  } while (0)

#define OP_REQUIRES_OK_ASYNC(ctx, expr, done)           \
  do {                                                  \
    ::tessera::Status _tessera_op_status = (expr);      \
    if (!_tessera_op_status.ok()) {                     \
      (ctx)->SetStatus(_tessera_op_status);             \
      (done)();                                         \
      return;                                           \
    }                                                   \
  } while (0)

}  // namespace tessera
