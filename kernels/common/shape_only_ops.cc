// Kernels that only read or change a tensor's shape, never its bytes: Reshape, Squeeze,
// ExpandDims, Shape and Size, for every device type. On a device with memory of its own, shapes and sizes are
// int32/int64 values kept in host memory, as TensorFlow keeps them on a GPU.
#include <limits>

#include "kernels/common/common_kernels.h"

namespace tessera {
namespace {

class ReshapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& shape = ctx->input(1);
    OP_REQUIRES(ctx, shape.rank() == 1,
                errors::InvalidArgument("shape must be a vector, got shape ",
                                        shape.shape().DebugString()));
    std::vector<int64_t> dims = IntTensorValues(shape);
    int64_t known = 1;
    int unknown = -1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == -1) {
        OP_REQUIRES(ctx, unknown < 0,
                    errors::InvalidArgument("Only one input size may be -1, not both ", unknown,
                                            " and ", i));
        unknown = static_cast<int>(i);
      } else {
        OP_REQUIRES(ctx, dims[i] >= 0,
                    errors::InvalidArgument("Size ", i, " must be non-negative, not ", dims[i]));
        OP_REQUIRES(ctx, !__builtin_mul_overflow(known, dims[i], &known),
                    errors::InvalidArgument("The requested shape ", TensorShape(dims).DebugString(),
                                            " has more than 2^63-1 elements"));
      }
    }
    if (unknown >= 0) {
      OP_REQUIRES(ctx, known > 0 && in.NumElements() % known == 0,
                  errors::InvalidArgument("Input to reshape is a tensor with ", in.NumElements(),
                                          " values, but the requested shape requires a multiple of ",
                                          known));
      dims[unknown] = in.NumElements() / known;
    }
    StatusOr<TensorShape> out_shape = TensorShape::Make(dims);
    OP_REQUIRES_OK(ctx, out_shape.status());
    OP_REQUIRES(ctx, out_shape->num_elements() == in.NumElements(),
                errors::InvalidArgument("Input to reshape is a tensor with ", in.NumElements(),
                                        " values, but the requested shape has ",
                                        out_shape->num_elements()));
    StatusOr<Tensor> out = in.Reshaped(*out_shape);
    OP_REQUIRES_OK(ctx, out.status());
    ctx->set_output(0, std::move(*out));
  }
  bool IsExpensive() const override { return false; }
};

// The input's buffer with `dims`, or the error.
void EmitReshaped(OpKernelContext* ctx, const Tensor& in, const std::vector<int64_t>& dims) {
  StatusOr<TensorShape> shape = TensorShape::Make(dims);
  OP_REQUIRES_OK(ctx, shape.status());
  StatusOr<Tensor> out = in.Reshaped(*shape);
  OP_REQUIRES_OK(ctx, out.status());
  ctx->set_output(0, std::move(*out));
}

class SqueezeOp : public OpKernel {
 public:
  explicit SqueezeOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("squeeze_dims", &axes_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    std::vector<bool> drop(static_cast<size_t>(in.rank()), axes_.empty());
    for (int64_t a : axes_) {
      OP_REQUIRES(ctx, a >= -in.rank() && a < in.rank(),
                  errors::InvalidArgument("Tried to squeeze dim index ", a, " for tensor with ", in.rank(),
                                          " dimensions."));
      const int at = static_cast<int>(a < 0 ? a + in.rank() : a);
      OP_REQUIRES(ctx, in.dim(at) == 1,
                  errors::InvalidArgument("Can not squeeze dim[", at, "], expected a dimension of 1, got ",
                                          in.dim(at)));
      drop[at] = true;
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < in.rank(); ++i) {
      if (!(drop[i] && in.dim(i) == 1)) dims.push_back(in.dim(i));
    }
    EmitReshaped(ctx, in, dims);
  }
  bool IsExpensive() const override { return false; }

 private:
  std::vector<int64_t> axes_;
};

class ExpandDimsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& dim = ctx->input(1);
    OP_REQUIRES(ctx, dim.NumElements() == 1,
                errors::InvalidArgument("'dim' must be a tensor with a single value, got shape ",
                                        dim.shape().DebugString()));
    const int64_t d = IntTensorValues(dim)[0];
    const int rank = in.rank() + 1;
    OP_REQUIRES(ctx, d >= -rank && d < rank,
                errors::InvalidArgument("Tried to expand dim index ", d, " for tensor with ", in.rank(), " dimensions."));
    std::vector<int64_t> dims(in.shape().dims().begin(), in.shape().dims().end());
    dims.insert(dims.begin() + (d < 0 ? d + rank : d), 1);
    EmitReshaped(ctx, in, dims);
  }
  bool IsExpensive() const override { return false; }
};

class ShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({in.rank()}), &out));
    for (int i = 0; i < in.rank(); ++i) {
      if (out->dtype() == DataType::kInt64) {
        out->data<int64_t>()[i] = in.dim(i);
      } else {
        out->data<int32_t>()[i] = static_cast<int32_t>(in.dim(i));
      }
    }
  }
  bool IsExpensive() const override { return false; }
};

class SizeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int64_t n = ctx->input(0).NumElements();
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(), &out));
    if (out->dtype() == DataType::kInt64) {
      out->data<int64_t>()[0] = n;
    } else {
      OP_REQUIRES(ctx, n <= std::numeric_limits<int32_t>::max(),
                  errors::InvalidArgument("Size of ", n, " elements does not fit int32; use out_type int64"));
      out->data<int32_t>()[0] = static_cast<int32_t>(n);
    }
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterShapeOnlyKernels(KernelRegistry& r, const std::string& device_type, bool own_memory) {
  KernelDefBuilder reshape("Reshape"), shape("Shape"), size("Size"), expand("ExpandDims");
  if (own_memory) {
    reshape.HostMemory("shape");
    expand.HostMemory("dim");
    shape.HostMemory("output");
    size.HostMemory("output");
  }
  r.Register<ReshapeOp>(reshape.Device(device_type));
  r.Register<ShapeOp>(shape.Device(device_type));
  r.Register<SizeOp>(size.Device(device_type));
  r.Register<SqueezeOp>(KernelDefBuilder("Squeeze").Device(device_type));
  r.Register<ExpandDimsOp>(expand.Device(device_type));
}

}  // namespace tessera
