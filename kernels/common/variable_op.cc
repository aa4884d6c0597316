// VariableV2: finds or creates the variable in the step's resource manager and outputs a
// reference to it. The variable's value is written by Assign on the variable's device, so
// this kernel never touches bytes and serves every device type.
#include "kernels/common/common_kernels.h"
#include "kernels/resources/variable.h"

namespace tessera {
namespace {

class VariableOp : public OpKernel {
 public:
  explicit VariableOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("shape", &shape_);
    if (s.ok()) s = c->GetAttr("dtype", &dtype_);
    if (s.ok()) s = c->GetAttr("container", &container_);
    if (s.ok()) s = c->GetAttr("shared_name", &shared_name_);
    if (!s.ok()) c->SetStatus(s);
    if (shared_name_.empty()) shared_name_ = name();
  }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->resource_manager() != nullptr,
                errors::Internal("VariableV2 needs a resource manager"));
    auto var = ctx->resource_manager()->LookupOrCreate<Variable>(
        container_, shared_name_, [&] { return std::make_shared<Variable>(dtype_, shape_); });
    OP_REQUIRES_OK(ctx, var.status());
    OP_REQUIRES(ctx, (*var)->dtype() == dtype_,
                errors::InvalidArgument("Variable ", shared_name_, " exists with dtype ",
                                        DataTypeName((*var)->dtype()), ", not ",
                                        DataTypeName(dtype_)));
    ctx->set_output_ref(0, std::move(*var), &name());
  }
  bool IsExpensive() const override { return false; }

 private:
  TensorShape shape_;
  DataType dtype_ = DataType::kInvalid;
  std::string container_;
  std::string shared_name_;
};

}  // namespace

void RegisterVariableOp(KernelRegistry& r, const std::string& device_type, const std::vector<DataType>& dtypes) {
  KernelDefBuilder builder("VariableV2");
  if (!dtypes.empty()) builder.TypeConstraint("dtype", dtypes);
  r.Register<VariableOp>(builder.Device(device_type));
}

}  // namespace tessera
