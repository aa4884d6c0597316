#include "kernels/data/dataset_op_kernel.h"

namespace tessera {

DatasetOpKernel::DatasetOpKernel(OpKernelConstruction* c) : OpKernel(c) {
  if (c->GetAttr("output_types", &dtypes_).ok() || c->GetAttr("Toutput_types", &dtypes_).ok()) {
    Status s = c->GetAttr("output_shapes", &shapes_);
    if (s.ok() && shapes_.size() != dtypes_.size()) {
      s = errors::InvalidArgument("Node '", name(), "' declares ", dtypes_.size(), " output types but ",
                                  shapes_.size(), " output shapes");
    }
    if (!s.ok()) c->SetStatus(s);
  }
}

void DatasetOpKernel::Compute(OpKernelContext* ctx) {
  StatusOr<DatasetPtr> dataset = MakeDataset(ctx);
  OP_REQUIRES_OK(ctx, dataset.status());
  if (!dtypes_.empty()) {
    OP_REQUIRES_OK(ctx, CheckElementSpec(**dataset, dtypes_, shapes_, StrCat("Node '", name(), "'")));
  }
  ctx->set_output(0, DatasetToTensor(std::move(*dataset)));
}

StatusOr<DatasetPtr> DatasetOpKernel::InputDataset(OpKernelContext* ctx, int i) {
  return DatasetFromTensor(ctx->input(i));
}

StatusOr<int64_t> DatasetOpKernel::ScalarInt64(OpKernelContext* ctx, int i, std::string_view what) {
  const Tensor& t = ctx->input(i);
  if (t.rank() != 0) return errors::InvalidArgument(what, " must be a scalar, got shape ", t.shape().DebugString());
  if (t.dtype() == DataType::kInt32) return int64_t{t.data<int32_t>()[0]};
  if (t.dtype() == DataType::kInt64) return t.data<int64_t>()[0];
  return errors::InvalidArgument(what, " must be an integer, got ", DataTypeName(t.dtype()));
}

StatusOr<bool> DatasetOpKernel::ScalarBool(OpKernelContext* ctx, int i, std::string_view what) {
  const Tensor& t = ctx->input(i);
  if (t.rank() != 0 || t.dtype() != DataType::kBool) {
    return errors::InvalidArgument(what, " must be a scalar bool");
  }
  return t.data<bool>()[0];
}

StatusOr<std::shared_ptr<const InstantiatedFunction>> DatasetOpKernel::Instantiate(OpKernelContext* ctx,
                                                                                   const FunctionDef& fn,
                                                                                   std::string_view attr) {
  if (ctx->function_runtime() == nullptr) return errors::Internal("No function runtime to run '", attr, "'");
  StatusOr<std::unique_ptr<const InstantiatedFunction>> f =
      ctx->function_runtime()->Instantiate(fn, ctx->device(), ctx->resource_manager());
  if (!f.ok()) return f.status().WithPrefix(StrCat("In function '", attr, "': "));
  return std::shared_ptr<const InstantiatedFunction>(std::move(*f));
}

IteratorEnv DatasetOpKernel::EnvOf(OpKernelContext* ctx) {
  return {ctx->intra_op_pool(), ctx->device(), ctx->resource_manager(), ctx->function_runtime()};
}

}  // namespace tessera
