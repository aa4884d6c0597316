// SaveTensors and RestoreTensors: the graph's access to checkpoint files
// (kernels/util/checkpoint_file.h), as SaveV2 and RestoreV2 are in TensorFlow.
#include "devices/cpu/cpu_kernels.h"
#include "kernels/util/checkpoint_file.h"

namespace tessera::cpu {
namespace {

StatusOr<std::string> Filename(const Tensor& t) {
  if (t.dtype() != DataType::kString || t.NumElements() != 1) {
    return errors::InvalidArgument("filename must be a string scalar, got ", DataTypeName(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  return t.data<std::string>()[0];
}

StatusOr<std::vector<std::string>> Names(const Tensor& t, int expected) {
  if (t.dtype() != DataType::kString || t.rank() != 1 || t.NumElements() != expected) {
    return errors::InvalidArgument("tensor_names must be a string vector of ", expected, " names, got ",
                                   DataTypeName(t.dtype()), " ", t.shape().DebugString());
  }
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + expected);
}

class SaveTensorsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<std::string> file = Filename(ctx->input(0));
    OP_REQUIRES_OK(ctx, file.status());
    const int n = ctx->num_inputs() - 2;
    StatusOr<std::vector<std::string>> names = Names(ctx->input(1), n);
    OP_REQUIRES_OK(ctx, names.status());
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (int i = 0; i < n; ++i) tensors.emplace_back((*names)[i], ctx->input(2 + i));
    OP_REQUIRES_OK(ctx, WriteCheckpoint(*file, tensors));
  }
};

// Each restored tensor must have the dtype (and shape, when given) the op declares for it.
class RestoreTensorsOp : public OpKernel {
 public:
  explicit RestoreTensorsOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("shapes", &shapes_);
    if (s.ok() && !shapes_.empty() && static_cast<int>(shapes_.size()) != num_outputs()) {
      s = errors::InvalidArgument("shapes has ", shapes_.size(), " entries for ", num_outputs(), " tensors");
    }
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    StatusOr<std::string> file = Filename(ctx->input(0));
    OP_REQUIRES_OK(ctx, file.status());
    StatusOr<std::vector<std::string>> names = Names(ctx->input(1), ctx->num_outputs());
    OP_REQUIRES_OK(ctx, names.status());
    StatusOr<std::unique_ptr<CheckpointReader>> reader = CheckpointReader::Open(*file);
    OP_REQUIRES_OK(ctx, reader.status());
    // Every entry is checked before any data is read: a file may claim gigabytes for a
    // variable of 32 floats.
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      StatusOr<CheckpointEntry> entry = (*reader)->Find((*names)[i]);
      OP_REQUIRES_OK(ctx, entry.status());
      OP_REQUIRES(ctx, entry->dtype == ctx->op_kernel().output_type(i),
                  errors::InvalidArgument("Tensor '", (*names)[i], "' in checkpoint '", *file, "' is ",
                                          DataTypeName(entry->dtype), ", expected ",
                                          DataTypeName(ctx->op_kernel().output_type(i))));
      OP_REQUIRES(ctx, shapes_.empty() || shapes_[i].IsCompatibleWith(entry->shape),
                  errors::InvalidArgument("Tensor '", (*names)[i], "' in checkpoint '", *file, "' has shape ",
                                          entry->shape.DebugString(), ", expected ", shapes_[i].DebugString()));
    }
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      StatusOr<Tensor> t = (*reader)->Read((*names)[i], ctx->device()->allocator());
      OP_REQUIRES_OK(ctx, t.status());
      ctx->set_output(i, std::move(*t));
    }
  }

 private:
  std::vector<TensorShape> shapes_;
};

}  // namespace

void RegisterCheckpointKernels(KernelRegistry& r) {
  r.Register<SaveTensorsOp>(KernelDefBuilder("SaveTensors").Device(kDeviceCpu));
  r.Register<RestoreTensorsOp>(KernelDefBuilder("RestoreTensors").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
