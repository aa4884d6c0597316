// Ops that gather elements into a new layout: Pack, Unpack, Slice, StridedSlice, Transpose, Tile
// and Pad. Each maps its output (Pad: its input), element by element in order, onto a strided
// walk of the other tensor, for every dtype (strings by assignment).
#include <functional>
#include <numeric>
#include <utility>
#include <vector>

#include "devices/cpu/cpu_kernels.h"
#include "graph/strided_slice.h"

namespace tessera::cpu {
namespace {

// The positions offset + sum(i_d * strides_d) of a tensor, i over `dims` in row-major order.
struct StridedWalk {
  int64_t offset = 0;
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
};

// Calls row(at, inner, inner_stride) for each innermost row of the walk, in row-major order:
// its elements sit at at + j * inner_stride for j < inner.
template <typename Row>
void ForEachRow(const StridedWalk& w, Row row) {
  const int rank = static_cast<int>(w.dims.size());
  int64_t n = 1;
  for (int64_t d : w.dims) n *= d;
  if (n == 0) return;
  if (rank == 0) {
    row(w.offset, 1, 0);
    return;
  }
  const int64_t inner = w.dims[rank - 1], inner_stride = w.strides[rank - 1];
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  int64_t at = w.offset;
  for (int64_t done = 0; done < n; done += inner) {
    row(at, inner, inner_stride);
    for (int d = rank - 2; d >= 0; --d) {
      at += w.strides[d];
      if (++index[d] < w.dims[d]) break;
      at -= w.strides[d] * w.dims[d];
      index[d] = 0;
    }
  }
}

template <typename T>
void CopyWalk(const T* in, const StridedWalk& w, T* out) {
  ForEachRow(w, [&](int64_t at, int64_t inner, int64_t stride) {
    if (stride == 1) {  // a contiguous row: one copy the compiler makes a memcpy
      out = std::copy(in + at, in + at + inner, out);
      return;
    }
    for (int64_t j = 0; j < inner; ++j) *out++ = in[at + j * stride];
  });
}

// The inverse: consecutive elements of `in` to the walk's positions in `out`.
template <typename T>
void ScatterWalk(const T* in, const StridedWalk& w, T* out) {
  ForEachRow(w, [&](int64_t at, int64_t inner, int64_t stride) {
    if (stride == 1) {
      std::copy(in, in + inner, out + at);
      in += inner;
      return;
    }
    for (int64_t j = 0; j < inner; ++j) out[at + j * stride] = *in++;
  });
}

void CopyWalk(const Tensor& in, const StridedWalk& w, Tensor* out) {
  VisitDataType(in.dtype(), [&](auto zero) {
    using T = decltype(zero);
    CopyWalk<T>(in.data<T>(), w, out->data<T>());
  });
}

std::vector<int64_t> RowMajorStrides(const TensorShape& s) {
  std::vector<int64_t> strides(static_cast<size_t>(s.rank()), 1);
  for (int i = s.rank() - 2; i >= 0; --i) strides[i] = strides[i + 1] * s.dim(i + 1);
  return strides;
}

void Emit(OpKernelContext* ctx, const Tensor& in, const StridedWalk& w, const TensorShape& shape) {
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
  CopyWalk(in, w, out);
}

bool IsObject(DataType dt) { return dt == DataType::kVariant; }

class PackOp : public OpKernel {
 public:
  explicit PackOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("axis", &axis_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& first = ctx->input(0);
    OP_REQUIRES(ctx, !IsObject(first.dtype()), errors::Unimplemented("Pack of variant tensors"));
    const int rank = first.rank() + 1;
    OP_REQUIRES(ctx, axis_ >= -rank && axis_ < rank,
                errors::InvalidArgument("axis = ", axis_, " not in [", -rank, ", ", rank, ")"));
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + rank : axis_);
    for (int i = 1; i < num_inputs(); ++i) {
      OP_REQUIRES(ctx, ctx->input(i).shape() == first.shape(),
                  errors::InvalidArgument("Shapes of all inputs must match: values[0].shape = ",
                                          first.shape().DebugString(), " != values[", i,
                                          "].shape = ", ctx->input(i).shape().DebugString()));
    }
    TensorShape shape;
    for (int d = 0; d < first.rank(); ++d) {
      if (d == axis) shape.AddDim(num_inputs());
      shape.AddDim(first.dim(d));
    }
    if (axis == first.rank()) shape.AddDim(num_inputs());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= first.dim(d);
    const int64_t inner = outer == 0 ? 0 : first.NumElements() / outer;
    const int64_t n = num_inputs();
    VisitDataType(first.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* o = out->data<T>();
      for (int64_t k = 0; k < n; ++k) {
        const T* in = ctx->input(static_cast<int>(k)).template data<T>();
        for (int64_t r = 0; r < outer; ++r) std::copy(in + r * inner, in + (r + 1) * inner, o + (r * n + k) * inner);
      }
    });
  }
  bool IsExpensive() const override { return false; }

 private:
  int64_t axis_ = 0;
};

class SliceOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, !IsObject(in.dtype()), errors::Unimplemented("Slice of variant tensors"));
    std::vector<int64_t> begin = IntTensorValues(ctx->input(1)), size = IntTensorValues(ctx->input(2));
    OP_REQUIRES(ctx, static_cast<int>(begin.size()) == in.rank() && size.size() == begin.size(),
                errors::InvalidArgument("Expected begin and size arguments to be 1-D tensors of size ", in.rank(),
                                        ", but got shapes ", ctx->input(1).shape().DebugString(), " and ",
                                        ctx->input(2).shape().DebugString(), " instead."));
    StridedWalk w;
    w.strides = RowMajorStrides(in.shape());
    TensorShape shape;
    for (int i = 0; i < in.rank(); ++i) {
      const int64_t len = size[i] == -1 ? in.dim(i) - begin[i] : size[i];
      OP_REQUIRES(ctx, begin[i] >= 0 && begin[i] <= in.dim(i) && len >= 0 && len <= in.dim(i) - begin[i],
                  errors::InvalidArgument("Expected begin[", i, "] in [0, ", in.dim(i), "] and size[", i, "] in [0, ",
                                          in.dim(i) - begin[i], "], but got ", begin[i], " and ", size[i]));
      w.offset += begin[i] * w.strides[i];
      w.dims.push_back(len);
      shape.AddDim(len);
    }
    Emit(ctx, in, w, shape);
  }
};

Status GetStridedSliceMasks(OpKernelConstruction* c, StridedSliceMasks* m) {
  RETURN_IF_ERROR(c->GetAttr("begin_mask", &m->begin));
  RETURN_IF_ERROR(c->GetAttr("end_mask", &m->end));
  RETURN_IF_ERROR(c->GetAttr("ellipsis_mask", &m->ellipsis));
  RETURN_IF_ERROR(c->GetAttr("new_axis_mask", &m->new_axis));
  return c->GetAttr("shrink_axis_mask", &m->shrink_axis);
}

// The walk over a tensor of shape `shape` that a strided slice takes; begin, end and strides are
// inputs first..first + 2.
StatusOr<std::pair<StridedWalk, TensorShape>> StridedSliceWalk(OpKernelContext* ctx, int first,
                                                               const TensorShape& shape,
                                                               const StridedSliceMasks& masks) {
  for (int i = first; i < first + 3; ++i) {
    if (ctx->input(i).rank() != 1) return errors::InvalidArgument("Expected begin, end, and strides to be 1D tensors");
  }
  ASSIGN_OR_RETURN(StridedSliceRange r,
                   ResolveStridedSlice(shape, IntTensorValues(ctx->input(first)), IntTensorValues(ctx->input(first + 1)),
                                       IntTensorValues(ctx->input(first + 2)), masks));
  StridedWalk w;
  std::vector<int64_t> strides = RowMajorStrides(shape);
  for (int i = 0; i < shape.rank(); ++i) {
    w.offset += r.begin[i] * strides[i];
    w.dims.push_back(r.size[i]);
    w.strides.push_back(r.stride[i] * strides[i]);
  }
  return std::make_pair(std::move(w), r.result);
}

class StridedSliceOp : public OpKernel {
 public:
  explicit StridedSliceOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = GetStridedSliceMasks(c, &masks_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, !IsObject(in.dtype()), errors::Unimplemented("StridedSlice of variant tensors"));
    auto walk = StridedSliceWalk(ctx, 1, in.shape(), masks_);
    OP_REQUIRES_OK(ctx, walk.status());
    Emit(ctx, in, walk->first, walk->second);
  }

 private:
  StridedSliceMasks masks_;
};

// StridedSlice's gradient: dy scattered to where the slice took its elements from a tensor of
// shape `shape`, zeros elsewhere.
class StridedSliceGradOp : public OpKernel {
 public:
  explicit StridedSliceGradOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = GetStridedSliceMasks(c, &masks_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(4);
    OP_REQUIRES(ctx, !IsObject(dy.dtype()), errors::Unimplemented("StridedSliceGrad of variant tensors"));
    OP_REQUIRES(ctx, ctx->input(0).rank() == 1,
                errors::InvalidArgument("shape must be a vector, got ", ctx->input(0).shape().DebugString()));
    StatusOr<TensorShape> shape = TensorShape::Make(IntTensorValues(ctx->input(0)));
    OP_REQUIRES_OK(ctx, shape.status());
    auto walk = StridedSliceWalk(ctx, 1, *shape, masks_);
    OP_REQUIRES_OK(ctx, walk.status());
    OP_REQUIRES(ctx, walk->second.num_elements() == dy.NumElements(),
                errors::InvalidArgument("dy of shape ", dy.shape().DebugString(), " for a slice of shape ",
                                        walk->second.DebugString()));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    VisitDataType(dy.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* o = out->data<T>();
      std::fill(o, o + out->NumElements(), T());
      ScatterWalk<T>(dy.data<T>(), walk->first, o);
    });
  }

 private:
  StridedSliceMasks masks_;
};

class TransposeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, !IsObject(in.dtype()), errors::Unimplemented("Transpose of variant tensors"));
    std::vector<int64_t> perm = IntTensorValues(ctx->input(1));
    OP_REQUIRES(ctx, static_cast<int>(perm.size()) == in.rank(),
                errors::InvalidArgument("transpose expects a vector of size ", in.rank(),
                                        ". But input(1) is a vector of size ", perm.size()));
    std::vector<bool> seen(perm.size(), false);
    std::vector<int64_t> strides = RowMajorStrides(in.shape());
    StridedWalk w;
    TensorShape shape;
    for (int64_t p : perm) {
      OP_REQUIRES(ctx, p >= 0 && p < in.rank() && !seen[p],
                  errors::InvalidArgument(p, " is out of range or repeated in the permutation"));
      seen[p] = true;
      w.dims.push_back(in.dim(static_cast<int>(p)));
      w.strides.push_back(strides[p]);
      shape.AddDim(in.dim(static_cast<int>(p)));
    }
    Emit(ctx, in, w, shape);
  }
};

// Tiling dimension d m times walks (m, d) with strides (0, stride_d).
class TileOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, !IsObject(in.dtype()), errors::Unimplemented("Tile of variant tensors"));
    std::vector<int64_t> multiples = IntTensorValues(ctx->input(1));
    OP_REQUIRES(ctx, static_cast<int>(multiples.size()) == in.rank(),
                errors::InvalidArgument("Expected multiples argument to be a vector of length ", in.rank(),
                                        " but got length ", multiples.size()));
    std::vector<int64_t> strides = RowMajorStrides(in.shape());
    StridedWalk w;
    std::vector<int64_t> dims;
    for (int i = 0; i < in.rank(); ++i) {
      int64_t d = 0;
      OP_REQUIRES(ctx, multiples[i] >= 0 && !__builtin_mul_overflow(in.dim(i), multiples[i], &d),
                  errors::InvalidArgument("Expected multiples[", i, "] >= 0 and a tile that fits, got ", multiples[i]));
      dims.push_back(d);
      w.dims.insert(w.dims.end(), {multiples[i], in.dim(i)});
      w.strides.insert(w.strides.end(), {0, strides[i]});
    }
    StatusOr<TensorShape> shape = TensorShape::Make(dims);
    OP_REQUIRES_OK(ctx, shape.status());
    Emit(ctx, in, w, *shape);
  }
};

class UnpackOp : public OpKernel {
 public:
  explicit UnpackOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("axis", &axis_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, !IsObject(in.dtype()), errors::Unimplemented("Unpack of variant tensors"));
    const int rank = in.rank();
    OP_REQUIRES(ctx, axis_ >= -rank && axis_ < rank,
                errors::InvalidArgument("axis = ", axis_, " not in [", -rank, ", ", rank, ")"));
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + rank : axis_);
    OP_REQUIRES(ctx, in.dim(axis) == num_outputs(),
                errors::InvalidArgument("Input shape axis ", axis, " must equal ", num_outputs(), ", got shape ",
                                        in.shape().DebugString()));
    std::vector<int64_t> strides = RowMajorStrides(in.shape());
    StridedWalk w;
    TensorShape shape;
    for (int d = 0; d < rank; ++d) {
      if (d == axis) continue;
      w.dims.push_back(in.dim(d));
      w.strides.push_back(strides[d]);
      shape.AddDim(in.dim(d));
    }
    for (int k = 0; k < num_outputs(); ++k) {
      w.offset = k * strides[axis];
      Tensor* out;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(k, shape, &out));
      CopyWalk(in, w, out);
    }
  }
  bool IsExpensive() const override { return false; }

 private:
  int64_t axis_ = 0;
};

// Pad and PadV2: the output filled with the constant (zero for Pad), then the input scattered
// into its interior.
class PadOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& paddings = ctx->input(1);
    OP_REQUIRES(ctx, !IsObject(in.dtype()), errors::Unimplemented("Pad of variant tensors"));
    OP_REQUIRES(ctx, paddings.shape() == TensorShape({in.rank(), 2}),
                errors::InvalidArgument("paddings must be a matrix with 2 columns and a row per input dimension (",
                                        in.rank(), "), got ", paddings.shape().DebugString()));
    const bool has_constant = num_inputs() == 3;
    if (has_constant) {
      OP_REQUIRES(ctx, ctx->input(2).NumElements() == 1,
                  errors::InvalidArgument("constant_values must be a scalar, got shape ",
                                          ctx->input(2).shape().DebugString()));
    }
    std::vector<int64_t> p = IntTensorValues(paddings);
    std::vector<int64_t> dims;
    for (int i = 0; i < in.rank(); ++i) {
      int64_t d = in.dim(i);
      OP_REQUIRES(ctx, p[2 * i] >= 0 && p[2 * i + 1] >= 0,
                  errors::InvalidArgument("Paddings must be non-negative: ", p[2 * i], " ", p[2 * i + 1]));
      OP_REQUIRES(ctx, !__builtin_add_overflow(d, p[2 * i], &d) && !__builtin_add_overflow(d, p[2 * i + 1], &d),
                  errors::InvalidArgument("Padding dimension ", i, " overflows"));
      dims.push_back(d);
    }
    StatusOr<TensorShape> shape = TensorShape::Make(dims);
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    // A dimension padded on neither side joins the one before it: the input's runs along it
    // stay contiguous in the output, so the copy moves whole runs (an NHWC image padded in
    // rows and columns: runs of W * C elements, not of C).
    std::vector<int64_t> in_dims, out_dims, before;
    for (int i = 0; i < in.rank(); ++i) {
      if (i > 0 && p[2 * i] == 0 && p[2 * i + 1] == 0) {
        in_dims.back() *= in.dim(i);
        out_dims.back() *= dims[i];
        before.back() *= dims[i];
      } else {
        in_dims.push_back(in.dim(i));
        out_dims.push_back(dims[i]);
        before.push_back(p[2 * i]);
      }
    }
    StridedWalk w;
    w.dims = in_dims;
    w.strides.assign(out_dims.size(), 1);
    for (int i = static_cast<int>(out_dims.size()) - 2; i >= 0; --i) w.strides[i] = w.strides[i + 1] * out_dims[i + 1];
    for (size_t i = 0; i < out_dims.size(); ++i) w.offset += before[i] * w.strides[i];
    // Where the outermost (joined) dimension is not padded, its slabs are padded apart, across
    // the intra-op threads (a batch of blocked activations: one slab per block of channels).
    const bool slabs = w.dims.size() > 1 && before[0] == 0 && out_dims[0] == in_dims[0];
    const int64_t count = slabs ? in_dims[0] : 1;
    int64_t in_slab = in.NumElements(), out_slab = out->NumElements();
    if (slabs) {
      in_slab = std::accumulate(in_dims.begin() + 1, in_dims.end(), int64_t{1}, std::multiplies<>());
      out_slab = w.strides[0];
    }
    VisitDataType(in.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T value = has_constant ? ctx->input(2).template data<T>()[0] : T();
      ctx->ParallelFor(count, out_slab, [&](int64_t first, int64_t last) {
        T* o = out->data<T>() + first * out_slab;
        std::fill(o, o + (last - first) * out_slab, value);
        StridedWalk part = w;
        if (slabs) part.dims[0] = last - first;
        ScatterWalk<T>(in.data<T>() + first * in_slab, part, o);
      });
    });
  }
};

}  // namespace

void RegisterSliceKernels(KernelRegistry& r) {
  r.Register<PackOp>(KernelDefBuilder("Pack").Device(kDeviceCpu));
  r.Register<UnpackOp>(KernelDefBuilder("Unpack").Device(kDeviceCpu));
  r.Register<PadOp>(KernelDefBuilder("Pad").Device(kDeviceCpu));
  r.Register<PadOp>(KernelDefBuilder("PadV2").Device(kDeviceCpu));
  r.Register<SliceOp>(KernelDefBuilder("Slice").Device(kDeviceCpu));
  r.Register<StridedSliceOp>(KernelDefBuilder("StridedSlice").Device(kDeviceCpu));
  r.Register<StridedSliceGradOp>(KernelDefBuilder("StridedSliceGrad").Device(kDeviceCpu));
  r.Register<TransposeOp>(KernelDefBuilder("Transpose").Device(kDeviceCpu));
  r.Register<TileOp>(KernelDefBuilder("Tile").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
