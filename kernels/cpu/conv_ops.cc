// Conv2D and its two backprops, MaxPool, AvgPool and their gradients, NHWC. Convolutions
// run as im2col (each output position's receptive field as one row of a patch matrix)
// times the filter as a [KH*KW*C, O] matrix, through Eigen's contraction on the intra-op
// pool. Its own translation unit: the contraction is slow to compile.
#include <algorithm>
#include <limits>

#include "graph/shape_inference.h"
#include "kernels/cpu/register.h"
#include "kernels/eigen_tensor.h"

namespace tessera::cpu {
namespace {

// Where windows fall: TensorFlow's SAME and VALID rules.
struct Geometry {
  int64_t n = 0, h = 0, w = 0, c = 0;  // input
  int64_t kh = 0, kw = 0;              // window
  int64_t sh = 1, sw = 1;              // strides
  int64_t oh = 0, ow = 0;              // output
  int64_t pad_top = 0, pad_left = 0;
};

StatusOr<Geometry> MakeGeometry(const TensorShape& input, int64_t kh, int64_t kw, const std::vector<int64_t>& strides,
                                const std::string& padding) {
  if (input.rank() != 4) return errors::InvalidArgument("input must be 4-D (NHWC), got ", input.DebugString());
  if (strides.size() != 4 || strides[0] != 1 || strides[3] != 1 || strides[1] < 1 || strides[2] < 1) {
    return errors::InvalidArgument("strides must be [1, sh, sw, 1] with sh, sw >= 1");
  }
  Geometry g;
  g.n = input.dim(0), g.h = input.dim(1), g.w = input.dim(2), g.c = input.dim(3);
  g.kh = kh, g.kw = kw, g.sh = strides[1], g.sw = strides[2];
  RETURN_IF_ERROR(WindowedOutputSize(g.h, kh, g.sh, padding, &g.oh, &g.pad_top));
  RETURN_IF_ERROR(WindowedOutputSize(g.w, kw, g.sw, padding, &g.ow, &g.pad_left));
  return g;
}

// c[m, n] = op(a) op(b), with a [m, k] (or [k, m] transposed) and b [k, n] (or [n, k]).
template <typename T>
void Gemm(OpKernelContext* ctx, const T* a, bool ta, const T* b, bool tb, T* c, int64_t m, int64_t k, int64_t n) {
  ConstEigenMatrixMap<T> A(a, ta ? k : m, ta ? m : k);
  ConstEigenMatrixMap<T> B(b, tb ? n : k, tb ? k : n);
  EigenMatrixMap<T> C(c, m, n);
  Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims;
  dims[0] = Eigen::IndexPair<Eigen::Index>(ta ? 0 : 1, tb ? 1 : 0);
  C.device(ctx->intra_op_pool()->eigen_device()) = A.contract(B, dims);
}

// Row (b, y, x) of the patch matrix holds the window at output (y, x) of image b, zero
// where it hangs over the padding.
template <typename T>
void Im2Col(OpKernelContext* ctx, const Geometry& g, const T* in, T* patches) {
  const int64_t cols = g.kh * g.kw * g.c;
  ctx->intra_op_pool()->ParallelFor(g.n * g.oh, g.ow * cols, [&](int64_t begin, int64_t end) {
    for (int64_t by = begin; by < end; ++by) {
      const int64_t b = by / g.oh, y = by % g.oh;
      for (int64_t x = 0; x < g.ow; ++x) {
        T* row = patches + (by * g.ow + x) * cols;
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          const int64_t iy = y * g.sh + ky - g.pad_top;
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const int64_t ix = x * g.sw + kx - g.pad_left;
            T* dst = row + (ky * g.kw + kx) * g.c;
            if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
              std::fill(dst, dst + g.c, T(0));
            } else {
              const T* src = in + ((b * g.h + iy) * g.w + ix) * g.c;
              std::copy(src, src + g.c, dst);
            }
          }
        }
      }
    }
  });
}

// The adjoint of Im2Col: adds each patch row back onto the input positions it came from.
// Images are independent, so each runs on one thread.
template <typename T>
void Col2Im(OpKernelContext* ctx, const Geometry& g, const T* patches, T* in) {
  const int64_t cols = g.kh * g.kw * g.c;
  std::fill(in, in + g.n * g.h * g.w * g.c, T(0));
  ctx->intra_op_pool()->ParallelFor(g.n, g.oh * g.ow * cols, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      for (int64_t y = 0; y < g.oh; ++y) {
        for (int64_t x = 0; x < g.ow; ++x) {
          const T* row = patches + ((b * g.oh + y) * g.ow + x) * cols;
          for (int64_t ky = 0; ky < g.kh; ++ky) {
            const int64_t iy = y * g.sh + ky - g.pad_top;
            if (iy < 0 || iy >= g.h) continue;
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int64_t ix = x * g.sw + kx - g.pad_left;
              if (ix < 0 || ix >= g.w) continue;
              const T* src = row + (ky * g.kw + kx) * g.c;
              T* dst = in + ((b * g.h + iy) * g.w + ix) * g.c;
              for (int64_t ci = 0; ci < g.c; ++ci) dst[ci] += src[ci];
            }
          }
        }
      }
    }
  });
}

class ConvBase : public OpKernel {
 public:
  explicit ConvBase(OpKernelConstruction* c) : OpKernel(c) {
    std::string format;
    std::vector<int64_t> dilations;
    Status s = c->GetAttr("strides", &strides_);
    if (s.ok()) s = c->GetAttr("padding", &padding_);
    if (s.ok()) s = c->GetAttr("data_format", &format);
    if (s.ok()) s = c->GetAttr("dilations", &dilations);
    if (s.ok() && format != "NHWC") s = errors::Unimplemented("Conv2D on CPU supports data_format NHWC, not ", format);
    if (s.ok() && dilations != std::vector<int64_t>{1, 1, 1, 1}) {
      s = errors::Unimplemented("Conv2D supports dilations [1, 1, 1, 1] only");
    }
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  // The geometry of input `in` and filter `f` [KH, KW, C, O], checked against each other.
  StatusOr<Geometry> ConvGeometry(const TensorShape& in, const TensorShape& f) const {
    if (f.rank() != 4) return errors::InvalidArgument("filter must be 4-D [KH, KW, C, O], got ", f.DebugString());
    ASSIGN_OR_RETURN(Geometry g, MakeGeometry(in, f.dim(0), f.dim(1), strides_, padding_));
    if (f.dim(2) != g.c) {
      return errors::InvalidArgument("input depth must match filter depth: ", g.c, " vs ", f.dim(2), " (input ",
                                     in.DebugString(), ", filter ", f.DebugString(), ")");
    }
    return g;
  }
  static StatusOr<TensorShape> ShapeInput(const Tensor& t, std::string_view what) {
    if (t.rank() != 1 || t.NumElements() != 4) return errors::InvalidArgument(what, " must be a 4-vector");
    return TensorShape::Make(IntTensorValues(t));
  }

  std::vector<int64_t> strides_;
  std::string padding_;
};

template <typename T>
class Conv2DOp : public ConvBase {
 public:
  using ConvBase::ConvBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& f = ctx->input(1);
    StatusOr<Geometry> g = ConvGeometry(in.shape(), f.shape());
    OP_REQUIRES_OK(ctx, g.status());
    const int64_t o = f.dim(3), rows = g->n * g->oh * g->ow, cols = g->kh * g->kw * g->c;
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({g->n, g->oh, g->ow, o}), &out));
    if (out->NumElements() == 0) return;
    if (cols == 0) {
      std::fill(out->data<T>(), out->data<T>() + out->NumElements(), T(0));
      return;
    }
    Tensor patches;
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(in.dtype(), TensorShape({rows, cols}), &patches));
    Im2Col(ctx, *g, in.data<T>(), patches.data<T>());
    Gemm<T>(ctx, patches.data<T>(), false, f.data<T>(), false, out->data<T>(), rows, cols, o);
  }
};

// d input = col2im(d out * filter^T).
template <typename T>
class Conv2DBackpropInputOp : public ConvBase {
 public:
  using ConvBase::ConvBase;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<TensorShape> in_shape = ShapeInput(ctx->input(0), "input_sizes");
    OP_REQUIRES_OK(ctx, in_shape.status());
    const Tensor& f = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    StatusOr<Geometry> g = ConvGeometry(*in_shape, f.shape());
    OP_REQUIRES_OK(ctx, g.status());
    const int64_t o = f.dim(3), rows = g->n * g->oh * g->ow, cols = g->kh * g->kw * g->c;
    OP_REQUIRES(ctx, dy.shape() == TensorShape({g->n, g->oh, g->ow, o}),
                errors::InvalidArgument("out_backprop has shape ", dy.shape().DebugString(), ", expected ",
                                        TensorShape({g->n, g->oh, g->ow, o}).DebugString()));
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *in_shape, &dx));
    if (dx->NumElements() == 0) return;
    Tensor patches;
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(dy.dtype(), TensorShape({rows, cols}), &patches));
    if (o == 0 || rows == 0) {
      std::fill(patches.data<T>(), patches.data<T>() + patches.NumElements(), T(0));
    } else {
      Gemm<T>(ctx, dy.data<T>(), false, f.data<T>(), true, patches.data<T>(), rows, o, cols);
    }
    Col2Im(ctx, *g, patches.data<T>(), dx->data<T>());
  }
};

// d filter = im2col(input)^T * d out.
template <typename T>
class Conv2DBackpropFilterOp : public ConvBase {
 public:
  using ConvBase::ConvBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    StatusOr<TensorShape> f_shape = ShapeInput(ctx->input(1), "filter_sizes");
    OP_REQUIRES_OK(ctx, f_shape.status());
    const Tensor& dy = ctx->input(2);
    StatusOr<Geometry> g = ConvGeometry(in.shape(), *f_shape);
    OP_REQUIRES_OK(ctx, g.status());
    const int64_t o = f_shape->dim(3), rows = g->n * g->oh * g->ow, cols = g->kh * g->kw * g->c;
    OP_REQUIRES(ctx, dy.shape() == TensorShape({g->n, g->oh, g->ow, o}),
                errors::InvalidArgument("out_backprop has shape ", dy.shape().DebugString(), ", expected ",
                                        TensorShape({g->n, g->oh, g->ow, o}).DebugString()));
    Tensor* df;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *f_shape, &df));
    if (df->NumElements() == 0) return;
    if (rows == 0) {
      std::fill(df->data<T>(), df->data<T>() + df->NumElements(), T(0));
      return;
    }
    Tensor patches;
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(in.dtype(), TensorShape({rows, cols}), &patches));
    Im2Col(ctx, *g, in.data<T>(), patches.data<T>());
    Gemm<T>(ctx, patches.data<T>(), true, dy.data<T>(), false, df->data<T>(), cols, rows, o);
  }
};

class PoolBase : public OpKernel {
 public:
  explicit PoolBase(OpKernelConstruction* c) : OpKernel(c) {
    std::string format;
    Status s = c->GetAttr("ksize", &ksize_);
    if (s.ok()) s = c->GetAttr("strides", &strides_);
    if (s.ok()) s = c->GetAttr("padding", &padding_);
    if (s.ok()) s = c->GetAttr("data_format", &format);
    if (s.ok() && format != "NHWC") s = errors::Unimplemented("Pooling on CPU supports data_format NHWC, not ", format);
    if (s.ok() && (ksize_.size() != 4 || ksize_[0] != 1 || ksize_[3] != 1)) {
      s = errors::InvalidArgument("ksize must be [1, kh, kw, 1]");
    }
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  StatusOr<Geometry> PoolGeometry(const TensorShape& in) const {
    return MakeGeometry(in, ksize_[1], ksize_[2], strides_, padding_);
  }
  // Calls fn(b, y, x, iy0, iy1, ix0, ix1) for every output position with the window's rows
  // [iy0, iy1) and columns [ix0, ix1) clipped to the input, images spread over the pool.
  template <typename F>
  static void ForEachWindow(OpKernelContext* ctx, const Geometry& g, F fn) {
    ctx->intra_op_pool()->ParallelFor(g.n, g.oh * g.ow * g.kh * g.kw * g.c, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        for (int64_t y = 0; y < g.oh; ++y) {
          const int64_t iy0 = std::max<int64_t>(y * g.sh - g.pad_top, 0);
          const int64_t iy1 = std::min<int64_t>(y * g.sh - g.pad_top + g.kh, g.h);
          for (int64_t x = 0; x < g.ow; ++x) {
            const int64_t ix0 = std::max<int64_t>(x * g.sw - g.pad_left, 0);
            const int64_t ix1 = std::min<int64_t>(x * g.sw - g.pad_left + g.kw, g.w);
            fn(b, y, x, iy0, iy1, ix0, ix1);
          }
        }
      }
    });
  }

  std::vector<int64_t> ksize_, strides_;
  std::string padding_;
};

// MaxPool, or AvgPool over the window's cells inside the input (TensorFlow's SAME rule).
template <typename T, bool kMax>
class PoolOp : public PoolBase {
 public:
  using PoolBase::PoolBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    StatusOr<Geometry> g = PoolGeometry(in.shape());
    OP_REQUIRES_OK(ctx, g.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({g->n, g->oh, g->ow, g->c}), &out));
    const T* ip = in.data<T>();
    T* op = out->data<T>();
    const Geometry geo = *g;
    ForEachWindow(ctx, geo, [&](int64_t b, int64_t y, int64_t x, int64_t iy0, int64_t iy1, int64_t ix0, int64_t ix1) {
      T* dst = op + ((b * geo.oh + y) * geo.ow + x) * geo.c;
      std::fill(dst, dst + geo.c, kMax ? std::numeric_limits<T>::lowest() : T(0));
      for (int64_t iy = iy0; iy < iy1; ++iy) {
        for (int64_t ix = ix0; ix < ix1; ++ix) {
          const T* src = ip + ((b * geo.h + iy) * geo.w + ix) * geo.c;
          for (int64_t ci = 0; ci < geo.c; ++ci) dst[ci] = kMax ? std::max(dst[ci], src[ci]) : dst[ci] + src[ci];
        }
      }
      if (!kMax) {
        const T count = static_cast<T>((iy1 - iy0) * (ix1 - ix0));
        for (int64_t ci = 0; ci < geo.c; ++ci) dst[ci] /= count;
      }
    });
  }
};

// Each window's gradient goes to the first of its maxima, as TensorFlow's CPU kernel does.
template <typename T>
class MaxPoolGradOp : public PoolBase {
 public:
  using PoolBase::PoolBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& dy = ctx->input(2);
    StatusOr<Geometry> g = PoolGeometry(in.shape());
    OP_REQUIRES_OK(ctx, g.status());
    OP_REQUIRES(ctx, dy.shape() == TensorShape({g->n, g->oh, g->ow, g->c}),
                errors::InvalidArgument("grad has shape ", dy.shape().DebugString(), ", expected ",
                                        TensorShape({g->n, g->oh, g->ow, g->c}).DebugString()));
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &dx));
    std::fill(dx->data<T>(), dx->data<T>() + dx->NumElements(), T(0));
    const T* ip = in.data<T>();
    const T* gp = dy.data<T>();
    T* dp = dx->data<T>();
    const Geometry geo = *g;
    ForEachWindow(ctx, geo, [&](int64_t b, int64_t y, int64_t x, int64_t iy0, int64_t iy1, int64_t ix0, int64_t ix1) {
      const T* grad = gp + ((b * geo.oh + y) * geo.ow + x) * geo.c;
      for (int64_t ci = 0; ci < geo.c; ++ci) {
        int64_t best = -1;
        for (int64_t iy = iy0; iy < iy1; ++iy) {
          for (int64_t ix = ix0; ix < ix1; ++ix) {
            const int64_t at = ((b * geo.h + iy) * geo.w + ix) * geo.c + ci;
            if (best < 0 || ip[at] > ip[best]) best = at;
          }
        }
        if (best >= 0) dp[best] += grad[ci];
      }
    });
  }
};

template <typename T>
class AvgPoolGradOp : public PoolBase {
 public:
  using PoolBase::PoolBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& sizes = ctx->input(0);
    OP_REQUIRES(ctx, sizes.rank() == 1 && sizes.NumElements() == 4,
                errors::InvalidArgument("orig_input_shape must be a 4-vector"));
    StatusOr<TensorShape> in_shape = TensorShape::Make(IntTensorValues(sizes));
    OP_REQUIRES_OK(ctx, in_shape.status());
    const Tensor& dy = ctx->input(1);
    StatusOr<Geometry> g = PoolGeometry(*in_shape);
    OP_REQUIRES_OK(ctx, g.status());
    OP_REQUIRES(ctx, dy.shape() == TensorShape({g->n, g->oh, g->ow, g->c}),
                errors::InvalidArgument("grad has shape ", dy.shape().DebugString(), ", expected ",
                                        TensorShape({g->n, g->oh, g->ow, g->c}).DebugString()));
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *in_shape, &dx));
    std::fill(dx->data<T>(), dx->data<T>() + dx->NumElements(), T(0));
    const T* gp = dy.data<T>();
    T* dp = dx->data<T>();
    const Geometry geo = *g;
    ForEachWindow(ctx, geo, [&](int64_t b, int64_t y, int64_t x, int64_t iy0, int64_t iy1, int64_t ix0, int64_t ix1) {
      const T* grad = gp + ((b * geo.oh + y) * geo.ow + x) * geo.c;
      const T scale = T(1) / static_cast<T>((iy1 - iy0) * (ix1 - ix0));
      for (int64_t iy = iy0; iy < iy1; ++iy) {
        for (int64_t ix = ix0; ix < ix1; ++ix) {
          T* dst = dp + ((b * geo.h + iy) * geo.w + ix) * geo.c;
          for (int64_t ci = 0; ci < geo.c; ++ci) dst[ci] += grad[ci] * scale;
        }
      }
    });
  }
};

}  // namespace

void RegisterConvKernels(KernelRegistry& r) {
  ForEachType<float, double>([&](auto zero) {
    using T = decltype(zero);
    r.Register<Conv2DOp<T>>(KernelDefBuilder("Conv2D").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<Conv2DBackpropInputOp<T>>(KernelDefBuilder("Conv2DBackpropInput").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<Conv2DBackpropFilterOp<T>>(
        KernelDefBuilder("Conv2DBackpropFilter").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<PoolOp<T, true>>(KernelDefBuilder("MaxPool").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<PoolOp<T, false>>(KernelDefBuilder("AvgPool").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<MaxPoolGradOp<T>>(KernelDefBuilder("MaxPoolGrad").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<AvgPoolGradOp<T>>(KernelDefBuilder("AvgPoolGrad").Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
}

}  // namespace tessera::cpu
