// ConcatV2, Split and SplitV: tensors joined or cut along one axis (the batch split of
// in-graph replication, and their gradients), for every device type. A cut along the
// outermost axis is a zero-copy slice; other axes copy rows of bytes with the device's
// strided copy, so the kernels are the same on every device.
#include "kernels/common/common_kernels.h"

namespace tessera {
namespace {

// `axis` from a scalar tensor, negative counting from the end, checked against `rank`.
StatusOr<int> Axis(const Tensor& t, int rank, std::string_view what) {
  if (t.NumElements() != 1 || t.rank() != 0) {
    return errors::InvalidArgument(what, " must be a scalar, got shape ", t.shape().DebugString());
  }
  const int64_t axis = IntTensorValues(t)[0];
  if (axis < -rank || axis >= rank) {
    return errors::InvalidArgument(what, " = ", axis, " is out of range for a tensor of rank ", rank);
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Status CheckCopyable(DataType dtype, std::string_view op) {
  if (DataTypeHoldsStrings(dtype) || dtype == DataType::kVariant) {
    return errors::Unimplemented(op, " of ", DataTypeName(dtype), " tensors");
  }
  return Status::OK();
}

// Products of the dimensions before and after `axis`.
void OuterInner(const TensorShape& s, int axis, int64_t* outer, int64_t* inner) {
  *outer = 1, *inner = 1;
  for (int d = 0; d < axis; ++d) *outer *= s.dim(d);
  for (int d = axis + 1; d < s.rank(); ++d) *inner *= s.dim(d);
}

// A chain of concatenations that each add to the last one's result (DenseNet's dense
// blocks) would copy what it has gathered once a link, quadratic in the chain's length.
// Where the axis is outermost but for dimensions of 1 (a blocked tensor of one image),
// the result is its inputs one after another: the graph's rewrite gives the chain's links
// `_reserve_axis_size`, the size along the axis its last link reaches; a link allocates
// room for that, and the next, holding the only reference to its first input, takes that
// buffer over and copies only the rest in behind it.
class ConcatV2Op : public OpKernel {
 public:
  ConcatV2Op(OpKernelConstruction* c, CopyRowsFn copy_rows) : OpKernel(c), copy_rows_(std::move(copy_rows)) {
    if (!c->GetAttr("_reserve_axis_size", &reserve_).ok()) reserve_ = 0;
  }
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() - 1;
    const Tensor& first = ctx->input(0);
    OP_REQUIRES_OK(ctx, CheckCopyable(first.dtype(), "ConcatV2"));
    OP_REQUIRES(ctx, first.rank() > 0, errors::InvalidArgument("ConcatV2 of scalars; reshape them to vectors first"));
    StatusOr<int> axis = Axis(ctx->input(n), first.rank(), "axis");
    OP_REQUIRES_OK(ctx, axis.status());
    std::vector<int64_t> dims(first.shape().dims().begin(), first.shape().dims().end());
    dims[*axis] = 0;
    for (int i = 0; i < n; ++i) {
      const Tensor& t = ctx->input(i);
      bool same = t.rank() == first.rank();
      for (int d = 0; same && d < t.rank(); ++d) same = d == *axis || t.dim(d) == first.dim(d);
      OP_REQUIRES(ctx, same,
                  errors::InvalidArgument("ConcatV2 inputs must match in every dimension but axis ", *axis,
                                          ": input 0 is ", first.shape().DebugString(), ", input ", i, " is ",
                                          t.shape().DebugString()));
      dims[*axis] += t.dim(*axis);
    }
    const TensorShape shape(dims);
    int64_t outer, inner;
    OuterInner(shape, *axis, &outer, &inner);
    const size_t elem = DataTypeStorageSize(first.dtype());
    const size_t out_row = static_cast<size_t>(dims[*axis] * inner) * elem;
    // Read before input 0 may be handed over.
    const size_t first_row = static_cast<size_t>(first.dim(*axis) * inner) * elem;
    Tensor* out;
    int copied = 0;  // the inputs already in place
    if (outer == 1 && n > 1 && ctx->forward_input_resized(0, 0, shape, &out)) {
      copied = 1;
    } else if (outer == 1 && reserve_ > dims[*axis]) {
      std::vector<int64_t> room = dims;
      room[*axis] = reserve_;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(room), &out));
      StatusOr<Tensor> resized = out->Resized(shape);
      OP_REQUIRES_OK(ctx, resized.status());
      *out = *std::move(resized);
    } else {
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    }
    char* dst = static_cast<char*>(out->raw_data());
    size_t offset = copied == 1 ? first_row : 0;
    for (int i = copied; i < n; ++i) {
      const Tensor& t = ctx->input(i);
      const size_t row = static_cast<size_t>(t.dim(*axis) * inner) * elem;
      if (row > 0 && outer > 0) {
        OP_REQUIRES_OK(ctx, copy_rows_(ctx, {dst + offset, out_row, t.raw_data(), row, row, outer}));
      }
      offset += row;
    }
  }

 private:
  const CopyRowsFn copy_rows_;
  int64_t reserve_;  // _reserve_axis_size, or 0
};

// Cuts `value` along `axis` into pieces of the given sizes.
void SplitInto(OpKernelContext* ctx, const CopyRowsFn& copy_rows, const Tensor& value, int axis,
               const std::vector<int64_t>& sizes) {
  if (axis == 0) {
    int64_t start = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      ctx->set_output(static_cast<int>(i), value.Slice(start, start + sizes[i]));
      start += sizes[i];
    }
    return;
  }
  OP_REQUIRES_OK(ctx, CheckCopyable(value.dtype(), "Split"));
  int64_t outer, inner;
  OuterInner(value.shape(), axis, &outer, &inner);
  const size_t elem = DataTypeStorageSize(value.dtype());
  const size_t in_row = static_cast<size_t>(value.dim(axis) * inner) * elem;
  const char* src = static_cast<const char*>(value.raw_data());
  size_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int64_t> dims(value.shape().dims().begin(), value.shape().dims().end());
    dims[axis] = sizes[i];
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(static_cast<int>(i), TensorShape(dims), &out));
    const size_t row = static_cast<size_t>(sizes[i] * inner) * elem;
    if (row > 0 && outer > 0) OP_REQUIRES_OK(ctx, copy_rows(ctx, {out->raw_data(), row, src + offset, in_row, row, outer}));
    offset += row;
  }
}

class SplitOp : public OpKernel {
 public:
  SplitOp(OpKernelConstruction* c, CopyRowsFn copy_rows) : OpKernel(c), copy_rows_(std::move(copy_rows)) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    OP_REQUIRES(ctx, value.rank() > 0, errors::InvalidArgument("Split of a scalar"));
    StatusOr<int> axis = Axis(ctx->input(0), value.rank(), "split_dim");
    OP_REQUIRES_OK(ctx, axis.status());
    const int n = ctx->num_outputs();
    OP_REQUIRES(ctx, value.dim(*axis) % n == 0,
                errors::InvalidArgument("Number of ways to split should evenly divide the split dimension, but got "
                                        "split_dim ", *axis, " (size = ", value.dim(*axis), ") and num_split ", n));
    SplitInto(ctx, copy_rows_, value, *axis, std::vector<int64_t>(n, value.dim(*axis) / n));
  }
  bool IsExpensive() const override { return false; }

 private:
  const CopyRowsFn copy_rows_;
};

class SplitVOp : public OpKernel {
 public:
  SplitVOp(OpKernelConstruction* c, CopyRowsFn copy_rows) : OpKernel(c), copy_rows_(std::move(copy_rows)) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    OP_REQUIRES(ctx, value.rank() > 0, errors::InvalidArgument("SplitV of a scalar"));
    StatusOr<int> axis = Axis(ctx->input(2), value.rank(), "split_dim");
    OP_REQUIRES_OK(ctx, axis.status());
    std::vector<int64_t> sizes = IntTensorValues(ctx->input(1));
    OP_REQUIRES(ctx, static_cast<int>(sizes.size()) == ctx->num_outputs(),
                errors::InvalidArgument("size_splits has ", sizes.size(), " entries for ", ctx->num_outputs(),
                                        " outputs"));
    // As in TensorFlow, one size may be -1: whatever the others leave.
    int64_t total = 0;
    int inferred = -1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1 && inferred < 0) {
        inferred = static_cast<int>(i);
        continue;
      }
      OP_REQUIRES(ctx, sizes[i] >= 0,
                  errors::InvalidArgument("size_splits has a negative size ", sizes[i],
                                          sizes[i] == -1 ? " (only one may be -1)" : ""));
      total += sizes[i];
    }
    if (inferred >= 0 && total <= value.dim(*axis)) {
      sizes[inferred] = value.dim(*axis) - total;
      total = value.dim(*axis);
    }
    OP_REQUIRES(ctx, total == value.dim(*axis),
                errors::InvalidArgument("size_splits sum to ", total, ", but split_dim ", *axis, " has size ",
                                        value.dim(*axis)));
    SplitInto(ctx, copy_rows_, value, *axis, sizes);
  }
  bool IsExpensive() const override { return false; }

 private:
  const CopyRowsFn copy_rows_;
};

}  // namespace

void RegisterConcatSplitKernels(KernelRegistry& r, const std::string& device_type, bool own_memory,
                                const std::vector<DataType>& dtypes, CopyRowsFn copy_rows) {
  // On a device with memory of its own, the axis and the sizes stay in host memory: the
  // kernel reads them on the host.
  auto def = [&](const char* op, std::vector<std::string> host_args) {
    KernelDefBuilder b(op);
    b.Device(device_type);
    if (!dtypes.empty()) b.TypeConstraint("T", dtypes);
    if (own_memory) {
      for (std::string& arg : host_args) b.HostMemory(std::move(arg));
    }
    return b;
  };
  auto make = [copy_rows](auto kernel) {
    using Kernel = typename decltype(kernel)::type;
    return [copy_rows](OpKernelConstruction* c) -> std::unique_ptr<OpKernel> {
      return std::make_unique<Kernel>(c, copy_rows);
    };
  };
  r.Register(def("ConcatV2", {"axis"}), make(std::type_identity<ConcatV2Op>{}));
  r.Register(def("Split", {"split_dim"}), make(std::type_identity<SplitOp>{}));
  r.Register(def("SplitV", {"size_splits", "split_dim"}), make(std::type_identity<SplitVOp>{}));
}

}  // namespace tessera
