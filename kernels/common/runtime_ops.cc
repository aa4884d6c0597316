// The kernels every device type runs for the runtime: NoOp, Identity, and _Arg and _Retval,
// which hand a step's feeds in and its fetches out. Placeholder is on every device, as in
// TensorFlow, so a graph may place what it feeds anywhere: a fed Placeholder becomes an _Arg
// and never runs; one run unfed fails its step. On a device with memory of its own,
// _Arg copies a feed from the host and _Retval a fetch to it, asynchronously; otherwise
// they pass the buffer.
#include <algorithm>

#include "kernels/common/common_kernels.h"
#include "kernels/copy_tensor.h"

namespace tessera {
namespace {

class IdentityOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
  bool IsExpensive() const override { return false; }
};

class IdentityNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) ctx->set_output(i, ctx->input(i));
  }
  bool IsExpensive() const override { return false; }
};

// TensorFlow's EnsureShape; the executor names the node in its error.
class EnsureShapeOp : public OpKernel {
 public:
  explicit EnsureShapeOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("shape", &shape_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, shape_.IsCompatibleWith(in.shape()),
                errors::InvalidArgument("Shape of tensor ", in.shape().DebugString(),
                                        " is not compatible with expected shape ", shape_.DebugString(), "."));
    ctx->set_output(0, in);
  }
  bool IsExpensive() const override { return false; }

 private:
  TensorShape shape_;
};

class NoOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  bool IsExpensive() const override { return false; }
};

class PlaceholderOp : public OpKernel {
 public:
  explicit PlaceholderOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("shape", &shape_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    ctx->SetStatus(errors::InvalidArgument(
        "You must feed a value for placeholder tensor '", name(), "' with dtype ",
        DataTypeName(output_type(0)),
        shape_.unknown_rank() ? std::string() : " and shape " + shape_.DebugString()));
  }
  bool IsExpensive() const override { return false; }

 private:
  TensorShape shape_;
};

int IndexAttr(OpKernelConstruction* c) {
  int index = 0;
  Status s = c->GetAttr("index", &index);
  if (!s.ok()) c->SetStatus(s);
  return index;
}

Status NeedCallFrame(OpKernelContext* ctx) {
  if (ctx->call_frame() != nullptr) return Status::OK();
  return errors::Internal(ctx->op_kernel().type_string(), " outside a call");
}

class ArgOp : public OpKernel {
 public:
  explicit ArgOp(OpKernelConstruction* c) : OpKernel(c), index_(IndexAttr(c)) {}
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, NeedCallFrame(ctx));
    StatusOr<Tensor> t = ctx->call_frame()->GetArg(index_);
    OP_REQUIRES_OK(ctx, t.status());
    ctx->set_output(0, std::move(*t));
  }
  bool IsExpensive() const override { return false; }

 private:
  const int index_;
};

// A feed on its way into device memory.
class ArgToDeviceOp : public AsyncOpKernel {
 public:
  explicit ArgToDeviceOp(OpKernelConstruction* c) : AsyncOpKernel(c), index_(IndexAttr(c)) {}
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    OP_REQUIRES_OK_ASYNC(ctx, NeedCallFrame(ctx), done);
    StatusOr<Tensor> t = ctx->call_frame()->GetArg(index_);
    OP_REQUIRES_OK_ASYNC(ctx, t.status(), done);
    CopyTensor(*t, nullptr, {}, ctx->device(), ctx->output_alloc_attr(0),
               [ctx, done = std::move(done)](const Status& copied, Tensor value) {
                 if (copied.ok()) {
                   ctx->set_output(0, std::move(value));
                 } else {
                   ctx->SetStatus(copied);
                 }
                 done();
               });
  }
  bool IsExpensive() const override { return false; }

 private:
  const int index_;
};

class RetvalOp : public OpKernel {
 public:
  explicit RetvalOp(OpKernelConstruction* c) : OpKernel(c), index_(IndexAttr(c)) {}
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, NeedCallFrame(ctx));
    OP_REQUIRES_OK(ctx, ctx->call_frame()->SetRetval(index_, ctx->input(0)));
  }
  bool IsExpensive() const override { return false; }

 private:
  const int index_;
};

// A fetch on its way out of device memory.
class RetvalFromDeviceOp : public AsyncOpKernel {
 public:
  explicit RetvalFromDeviceOp(OpKernelConstruction* c) : AsyncOpKernel(c), index_(IndexAttr(c)) {}
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    OP_REQUIRES_OK_ASYNC(ctx, NeedCallFrame(ctx), done);
    CopyTensor(ctx->input(0), ctx->device(), ctx->input_alloc_attr(0), nullptr, {},
               [this, ctx, done = std::move(done)](const Status& copied, Tensor value) {
                 ctx->SetStatus(copied.ok() ? ctx->call_frame()->SetRetval(index_, value) : copied);
                 done();
               });
  }
  bool IsExpensive() const override { return false; }

 private:
  const int index_;
};

// The synchronous kernel when the tensor is in host memory on both sides, else the copying one.
template <typename HostKernel, typename DeviceKernel>
KernelFactory ByMemory(bool output_side) {
  return [output_side](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
    const std::vector<MemoryType>& types = output_side ? c->output_memory_types() : c->input_memory_types();
    const MemoryType type = types.empty() ? MemoryType::kDevice : types[0];
    if (IsHostMemory(c->device(), AllocatorAttributes::For(type))) return std::make_unique<HostKernel>(c);
    return std::make_unique<DeviceKernel>(c);
  };
}

// Registers `factory` for `op` on `device_type`: the `host` dtypes of attr `type_attr` with
// `host_args` in host memory, every other dtype in device memory.
void RegisterSplitByType(KernelRegistry& r, const char* op, const std::string& device_type, const char* type_attr,
                         const std::vector<DataType>& host, const std::vector<const char*>& host_args,
                         const KernelFactory& factory) {
  std::vector<DataType> device;
  for (DataType dt : {DataType::kFloat, DataType::kDouble, DataType::kHalf, DataType::kBFloat16, DataType::kInt32,
                      DataType::kInt64, DataType::kUInt8, DataType::kBool, DataType::kString, DataType::kVariant,
                      DataType::kResource}) {
    if (std::find(host.begin(), host.end(), dt) == host.end()) device.push_back(dt);
  }
  KernelDefBuilder on_host(op);
  on_host.Device(device_type).TypeConstraint(type_attr, host);
  for (const char* arg : host_args) on_host.HostMemory(arg);
  r.Register(on_host, factory);
  r.Register(KernelDefBuilder(op).Device(device_type).TypeConstraint(type_attr, device), factory);
}

}  // namespace

void RegisterRuntimeKernels(KernelRegistry& r, const std::string& device_type) {
  r.Register<NoOp>(KernelDefBuilder("NoOp").Device(device_type));
  r.Register<IdentityOp>(KernelDefBuilder("Identity").Device(device_type));
  r.Register<EnsureShapeOp>(KernelDefBuilder("EnsureShape").Device(device_type));
  r.Register<IdentityNOp>(KernelDefBuilder("IdentityN").Device(device_type));
  r.Register<IdentityOp>(KernelDefBuilder("StopGradient").Device(device_type));
  r.Register<IdentityOp>(KernelDefBuilder("PlaceholderWithDefault").Device(device_type));
  r.Register<PlaceholderOp>(KernelDefBuilder("Placeholder").Device(device_type));
  r.Register<ArgOp>(KernelDefBuilder("_Arg").Device(device_type));
  r.Register<RetvalOp>(KernelDefBuilder("_Retval").Device(device_type));
  RegisterSendRecvKernels(r, device_type, false);
}

void RegisterRuntimeKernelsWithOwnMemory(KernelRegistry& r, const std::string& device_type,
                                         const std::vector<DataType>& host_memory_types) {
  std::vector<DataType> host = host_memory_types;
  for (DataType dt : {DataType::kString, DataType::kVariant, DataType::kResource}) {
    if (std::find(host.begin(), host.end(), dt) == host.end()) host.push_back(dt);
  }
  r.Register<NoOp>(KernelDefBuilder("NoOp").Device(device_type));
  for (auto [op, type_attr] : {std::pair{"Identity", "T"}, {"StopGradient", "T"}, {"PlaceholderWithDefault", "dtype"}}) {
    RegisterSplitByType(r, op, device_type, type_attr, host, {"input", "output"},
                        [](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
                          return std::make_unique<IdentityOp>(c);
                        });
  }
  RegisterSplitByType(r, "Placeholder", device_type, "dtype", host, {"output"},
                      [](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
                        return std::make_unique<PlaceholderOp>(c);
                      });
  RegisterSplitByType(r, "_Arg", device_type, "T", host, {"output"}, ByMemory<ArgOp, ArgToDeviceOp>(true));
  RegisterSplitByType(r, "_Retval", device_type, "T", host, {"input"}, ByMemory<RetvalOp, RetvalFromDeviceOp>(false));
  RegisterSendRecvKernels(r, device_type, true);
}

}  // namespace tessera
