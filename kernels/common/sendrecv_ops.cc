// _Send and _Recv: the two ends of a cross-device edge, meeting in the step's rendezvous.
// Each end tells the rendezvous where its tensor lives; between host memory and host memory
// the buffer is handed over, otherwise the rendezvous copies. _HostSend and _HostRecv are
// the same kernels for a tensor a device keeps in host memory.
#include "kernels/common/common_kernels.h"

namespace tessera {
namespace {

// The rendezvous key of a _Send/_Recv pair, from the attrs both ends carry, with the frame
// and iteration the end runs in: inside a loop, each iteration's tensor has its own key.
class TransferKey {
 public:
  explicit TransferKey(OpKernelConstruction* c) {
    int64_t incarnation = 0;
    Status s = c->GetAttr("tensor_name", &tensor_name_);
    if (s.ok()) s = c->GetAttr("send_device", &send_device_);
    if (s.ok()) s = c->GetAttr("send_device_incarnation", &incarnation);
    if (s.ok()) s = c->GetAttr("recv_device", &recv_device_);
    if (!s.ok()) {
      c->SetStatus(s);
      return;
    }
    incarnation_ = static_cast<uint64_t>(incarnation);
    root_key_ = Rendezvous::CreateKey(send_device_, incarnation_, recv_device_, tensor_name_);
  }

  std::string For(const FrameAndIter& at) const {
    if (at.frame_id == 0 && at.iter_id == 0) return root_key_;
    return Rendezvous::CreateKey(send_device_, incarnation_, recv_device_, tensor_name_,
                                 StrCat(at.frame_id, ":", at.iter_id));
  }

 private:
  std::string tensor_name_, send_device_, recv_device_;
  uint64_t incarnation_ = 0;
  std::string root_key_;
};

Status NeedRendezvous(OpKernelContext* ctx) {
  if (ctx->rendezvous() != nullptr) return Status::OK();
  return errors::Internal("No rendezvous in this step for ", ctx->op_kernel().type_string(),
                          "; run it through a Session");
}

// The executor runs a _Send whose input is dead too (as TensorFlow's does): the empty
// tensor it then sends tells the receiver that the value is dead.
class SendOp : public OpKernel {
 public:
  explicit SendOp(OpKernelConstruction* c) : OpKernel(c), key_(c) {}
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, NeedRendezvous(ctx));
    Rendezvous::Args args;
    args.device = ctx->device();
    args.alloc_attrs = ctx->input_alloc_attr(0);
    OP_REQUIRES_OK(ctx, ctx->rendezvous()->Send(key_.For(ctx->frame_iter()), args, ctx->input(0)));
  }
  bool IsExpensive() const override { return false; }

 private:
  const TransferKey key_;
};

// A dead value received leaves the output unset, which the executor passes on as dead.
class RecvOp : public AsyncOpKernel {
 public:
  explicit RecvOp(OpKernelConstruction* c) : AsyncOpKernel(c), key_(c) {}
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    OP_REQUIRES_OK_ASYNC(ctx, NeedRendezvous(ctx), done);
    Rendezvous::Args args;
    args.device = ctx->device();
    args.alloc_attrs = ctx->output_alloc_attr(0);
    std::string key = key_.For(ctx->frame_iter());
    ctx->rendezvous()->RecvAsync(key, args, [this, ctx, key, done = std::move(done)](const Status& st,
                                                                                     const Tensor& value) {
      if (!st.ok()) {
        ctx->SetStatus(st);
      } else if (!value.IsInitialized()) {
        // Dead: nothing to check.
      } else if (value.dtype() != output_type(0)) {
        ctx->SetStatus(errors::Internal("Received a ", DataTypeName(value.dtype()), " tensor under key '",
                                        key, "', expected ", DataTypeName(output_type(0))));
      } else {
        ctx->set_output(0, value);
      }
      done();
    });
  }
  // Only registers a callback: not worth handing to another thread.
  bool IsExpensive() const override { return false; }

 private:
  const TransferKey key_;
};

}  // namespace

void RegisterSendRecvKernels(KernelRegistry& r, const std::string& device_type, bool host_variants) {
  r.Register<SendOp>(KernelDefBuilder("_Send").Device(device_type));
  r.Register<RecvOp>(KernelDefBuilder("_Recv").Device(device_type));
  if (!host_variants) return;
  r.Register<SendOp>(KernelDefBuilder("_HostSend").Device(device_type).HostMemory("tensor"));
  r.Register<RecvOp>(KernelDefBuilder("_HostRecv").Device(device_type).HostMemory("tensor"));
}

}  // namespace tessera
