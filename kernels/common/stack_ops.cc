// The stacks of TensorFlow's while-loop gradients: StackV2 makes one in the step's resources,
// StackPushV2 pushes a tensor (by reference, no copy) in the forward loop, StackPopV2 pops them
// in the gradient loop, StackCloseV2 drops what is left. Device-independent: the elements stay
// in whatever memory they were computed in.
#include <atomic>
#include <mutex>
#include <vector>

#include "kernels/common/common_kernels.h"
#include "kernels/resource_handle.h"

namespace tessera {
namespace {

class Stack : public ResourceBase {
 public:
  Stack(std::string name, DataType dtype, int64_t max_size)
      : name_(std::move(name)), dtype_(dtype), max_size_(max_size) {}

  Status Push(Tensor t) {
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_IF_ERROR(CheckOpen());
    if (t.dtype() != dtype_) {
      return errors::InvalidArgument("Stack[", name_, "] holds ", DataTypeName(dtype_), ", not ", DataTypeName(t.dtype()));
    }
    if (max_size_ >= 0 && static_cast<int64_t>(elements_.size()) >= max_size_) {
      return errors::InvalidArgument("Stack[", name_, "] overflowed its max_size (", max_size_, ")");
    }
    elements_.push_back(std::move(t));
    return Status::OK();
  }

  StatusOr<Tensor> Pop() {
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_IF_ERROR(CheckOpen());
    if (elements_.empty()) return errors::InvalidArgument("Stack[", name_, "] is empty.");
    Tensor t = std::move(elements_.back());
    elements_.pop_back();
    return t;
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    elements_.clear();
  }

  std::string DebugString() const override { return "Stack[" + name_ + "]"; }

 private:
  Status CheckOpen() const {
    if (closed_) return errors::InvalidArgument("Stack[", name_, "] has already been closed.");
    return Status::OK();
  }

  const std::string name_;
  const DataType dtype_;
  const int64_t max_size_;  // < 0: unbounded
  std::mutex mu_;
  bool closed_ = false;          // guarded by mu_
  std::vector<Tensor> elements_;  // guarded by mu_
};

constexpr const char* kStackContainer = "_stacks";

class StackOp : public OpKernel {
 public:
  explicit StackOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("elem_type", &dtype_);
    if (s.ok()) s = c->GetAttr("stack_name", &stack_name_);
    if (!s.ok()) c->SetStatus(s);
    if (stack_name_.empty()) stack_name_ = name();
  }
  void Compute(OpKernelContext* ctx) override {
    ResourceMgr* rm = ctx->step_resource_manager();
    OP_REQUIRES(ctx, rm != nullptr, errors::Internal("A stack needs the step's resources, and this run has none"));
    const Tensor& max_size = ctx->input(0);
    OP_REQUIRES(ctx, max_size.NumElements() == 1,
                errors::InvalidArgument("max_size must be a scalar, got shape ", max_size.shape().DebugString()));
    // One stack per run of this node: a loop nested in another makes one per outer iteration.
    const std::string name = StrCat(stack_name_, "_", next_id_.fetch_add(1, std::memory_order_relaxed));
    const int64_t limit = max_size.data<int32_t>()[0];
    auto stack = rm->LookupOrCreate<Stack>(kStackContainer, name, [&] {
      return std::make_shared<Stack>(name, dtype_, limit);
    });
    OP_REQUIRES_OK(ctx, stack.status());
    OP_REQUIRES_OK(ctx, OutputResourceHandle(ctx, kStackContainer, name));
  }
  bool IsExpensive() const override { return false; }

 private:
  DataType dtype_ = DataType::kInvalid;
  std::string stack_name_;
  std::atomic<int64_t> next_id_{0};
};

StatusOr<std::shared_ptr<Stack>> StackOfInput(OpKernelContext* ctx) {
  ASSIGN_OR_RETURN(ResourceName r, ResourceNameOfInput(ctx, "stack"));
  if (ctx->step_resource_manager() == nullptr) {
    return errors::Internal("A stack needs the step's resources, and this run has none");
  }
  return ctx->step_resource_manager()->Lookup<Stack>(r.container, r.name);
}

class StackPushOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto stack = StackOfInput(ctx);
    OP_REQUIRES_OK(ctx, stack.status());
    OP_REQUIRES_OK(ctx, (*stack)->Push(ctx->input(1)));
    ctx->set_output(0, ctx->input(1));
  }
  bool IsExpensive() const override { return false; }
};

class StackPopOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto stack = StackOfInput(ctx);
    OP_REQUIRES_OK(ctx, stack.status());
    StatusOr<Tensor> t = (*stack)->Pop();
    OP_REQUIRES_OK(ctx, t.status());
    OP_REQUIRES(ctx, t->dtype() == output_type(0),
                errors::InvalidArgument("Stack holds ", DataTypeName(t->dtype()), ", the pop wants ",
                                        DataTypeName(output_type(0))));
    ctx->set_output(0, std::move(*t));
  }
  bool IsExpensive() const override { return false; }
};

class StackCloseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto stack = StackOfInput(ctx);
    OP_REQUIRES_OK(ctx, stack.status());
    (*stack)->Close();
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterStackKernels(KernelRegistry& r, const std::string& device_type, bool own_memory) {
  // The handle and max_size are scalars the kernels read on the host.
  auto def = [&](const char* op) {
    KernelDefBuilder b(op);
    b.Device(device_type);
    if (own_memory) b.HostMemory("handle");
    return b;
  };
  r.Register<StackOp>(own_memory ? def("StackV2").HostMemory("max_size") : def("StackV2"));
  r.Register<StackPushOp>(def("StackPushV2"));
  r.Register<StackPopOp>(def("StackPopV2"));
  r.Register<StackCloseOp>(def("StackCloseV2"));
}

}  // namespace tessera
