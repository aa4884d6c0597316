// Kernels of the control-flow ops, for every device type. Each only forwards a value (or a
// reference) from an input to an output; what makes them control flow, dead outputs and
// frames, is the executor's (runtime/executor_frames.cc).
#include "kernels/common/common_kernels.h"

namespace tessera {
namespace {

// Enter, Exit, NextIteration, LoopCond and their Ref forms.
class ForwardOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->forward_ref_input_to_ref_output(0, 0); }
  bool IsExpensive() const override { return false; }
};

// Forwards `data` to output_true or output_false; the other output stays empty, which the
// executor reads as dead.
class SwitchOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& pred = ctx->input(1);
    OP_REQUIRES(ctx, pred.dtype() == DataType::kBool && pred.NumElements() == 1,
                errors::InvalidArgument("The second input must be a scalar, but it has shape ",
                                        pred.shape().DebugString()));
    ctx->forward_ref_input_to_ref_output(0, pred.data<bool>()[0] ? 1 : 0);
  }
  bool IsExpensive() const override { return false; }
};

class SwitchNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& index = ctx->input(1);
    OP_REQUIRES(ctx, index.dtype() == DataType::kInt32 && index.NumElements() == 1,
                errors::InvalidArgument("_SwitchN's output_index must be an int32 scalar, it has shape ",
                                        index.shape().DebugString()));
    int32_t out = index.data<int32_t>()[0];
    if (out < 0 || out >= num_outputs()) out = num_outputs() - 1;
    ctx->set_output(out, ctx->input(0));
  }
  bool IsExpensive() const override { return false; }
};

// The executor runs a Merge once one input is alive (absent inputs are empty); it forwards
// the first live one and its index.
class MergeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < num_inputs(); ++i) {
      if (!ctx->input(i).IsInitialized() && ctx->input_ref(i) == nullptr) continue;
      ctx->forward_ref_input_to_ref_output(i, 0);
      Tensor* index;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape(), &index));
      index->data<int32_t>()[0] = i;
      return;
    }
    ctx->SetStatus(errors::Internal("Merge ran without a live input"));
  }
  bool IsExpensive() const override { return false; }
};

class ControlTriggerOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterControlFlowKernels(KernelRegistry& r, const std::string& device_type, bool own_memory) {
  for (const std::string prefix : {"", "Ref"}) {
    KernelDefBuilder switch_op(prefix + "Switch"), merge(prefix + "Merge");
    if (own_memory) {
      switch_op.HostMemory("pred");
      merge.HostMemory("value_index");
    }
    r.Register<SwitchOp>(switch_op.Device(device_type));
    r.Register<MergeOp>(merge.Device(device_type));
    for (const char* op : {"Enter", "Exit", "NextIteration"}) {
      r.Register<ForwardOp>(KernelDefBuilder(prefix + op).Device(device_type));
    }
  }
  KernelDefBuilder switch_n("_SwitchN");
  if (own_memory) switch_n.HostMemory("output_index");
  r.Register<SwitchNOp>(switch_n.Device(device_type));
  KernelDefBuilder loop_cond("LoopCond");
  if (own_memory) loop_cond.HostMemory("input").HostMemory("output");
  r.Register<ForwardOp>(loop_cond.Device(device_type));
  r.Register<ControlTriggerOp>(KernelDefBuilder("ControlTrigger").Device(device_type));
}

}  // namespace tessera
