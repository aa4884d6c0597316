// Conv2D and its two backprops, MaxPool, AvgPool and their gradients, NHWC. float32
// convolutions run on oneDNN (dnnl_conv.h), which is several times faster than any GEMM
// formulation here, but for those of few taps fused with a max pool (small_conv.h); float64 ones (gradient checks, oneDNN has no f64) run as im2col (each
// output position's receptive field as one row of a patch matrix) times the filter as a
// [KH*KW*C, O] matrix, through Eigen's contraction on the intra-op pool. Its own
// translation unit: the contraction is slow to compile.
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>

#include "devices/cpu/batch_parts.h"
#include "devices/cpu/cpu_kernels.h"
#include "devices/cpu/dnnl_conv.h"
#include "devices/cpu/pooling.h"
#include "devices/cpu/small_conv.h"
#include "graph/op_kinds.h"
#include "kernels/util/conv_geometry.h"
#include "kernels/util/eigen_tensor.h"
#include "kernels/util/fused_ops.h"

namespace tessera::cpu {
namespace {

// c[m, n] = op(a) op(b), with a [m, k] (or [k, m] transposed) and b [k, n] (or [n, k]).
template <typename T>
void Gemm(OpKernelContext* ctx, const T* a, bool ta, const T* b, bool tb, T* c, int64_t m, int64_t k, int64_t n) {
  ConstEigenMatrixMap<T> A(a, ta ? k : m, ta ? m : k);
  ConstEigenMatrixMap<T> B(b, tb ? n : k, tb ? k : n);
  EigenMatrixMap<T> C(c, m, n);
  Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims;
  dims[0] = Eigen::IndexPair<Eigen::Index>(ta ? 0 : 1, tb ? 1 : 0);
  AssignOnPool(*ctx->intra_op_pool(), C, A.contract(B, dims));
}

// Row (b, y, x) of the patch matrix holds the window at output (y, x) of image b, zero
// where it hangs over the padding.
template <typename T>
void Im2Col(OpKernelContext* ctx, const Geometry& g, const T* in, T* patches) {
  const int64_t cols = g.kh * g.kw * g.c;
  ctx->ParallelFor(g.n * g.oh, g.ow * cols, [&](int64_t begin, int64_t end) {
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
  ctx->ParallelFor(g.n, g.oh * g.ow * cols, [&](int64_t begin, int64_t end) {
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
  explicit ConvBase(OpKernelConstruction* c) : OpKernel(c), attrs_(ReadConvAttrs(c)) {
    const Edge* filter = c->node().input_edge(1);
    if (filter != nullptr && IsConstant(filter->src->op())) packed_ = std::make_unique<PackedFilter>();
  }

 protected:
  const ConvAttrs attrs_;
  // Where the filter is a constant (a frozen model's), the filter as oneDNN wants it.
  std::unique_ptr<PackedFilter> packed_;
};

template <typename T>
class Conv2DOp : public ConvBase {
 public:
  using ConvBase::ConvBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& f = ctx->input(1);
    StatusOr<Geometry> g = ConvGeometry(attrs_, in.shape(), f.shape());
    OP_REQUIRES_OK(ctx, g.status());
    const int64_t o = f.dim(3), rows = g->n * g->oh * g->ow, cols = g->kh * g->kw * g->c;
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g->output_shape(o), &out));
    if (out->NumElements() == 0) return;
    if (cols == 0) {
      std::fill(out->data<T>(), out->data<T>() + out->NumElements(), T(0));
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      OP_REQUIRES_OK(ctx, DnnlConv2D(ctx, *g, o, in.data<float>(), f.data<float>(), out->data<float>(), {},
                                     packed_.get()));
      return;
    }
    Tensor patches;
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(in.dtype(), TensorShape({rows, cols}), &patches));
    Im2Col(ctx, *g, in.data<T>(), patches.data<T>());
    Gemm<T>(ctx, patches.data<T>(), false, f.data<T>(), false, out->data<T>(), rows, cols, o);
  }
};

// A fused convolution's pool: its ksize, pool_strides and pool_padding, over rows and
// columns only.
Status ReadFusedPoolAttrs(OpKernelConstruction* c, PoolAttrs* pool) {
  RETURN_IF_ERROR(c->GetAttr("ksize", &pool->ksize));
  RETURN_IF_ERROR(c->GetAttr("pool_strides", &pool->strides));
  RETURN_IF_ERROR(c->GetAttr("pool_padding", &pool->padding));
  if (pool->ksize.size() != 4 || pool->strides.size() != 4 || pool->ksize[0] != 1 || pool->ksize[3] != 1 ||
      pool->strides[0] != 1 || pool->strides[3] != 1) {
    return errors::InvalidArgument(c->node().op(), " pools over rows and columns only: ksize and pool_strides are ",
                                   "[1, h, w, 1]");
  }
  return Status::OK();
}

// An argmax numbers a window's cells in a uint8.
Status CheckArgmaxWindow(OpKernelConstruction* c, const PoolAttrs& pool) {
  if (pool.ksize[1] <= 0 || pool.ksize[2] <= 0 || pool.ksize[1] * pool.ksize[2] > kMaxArgmaxCells) {
    return errors::InvalidArgument(c->node().op(), " keeps argmaxes of windows of 1 to ", kMaxArgmaxCells,
                                   " cells, not ", pool.ksize[1], "x", pool.ksize[2]);
  }
  return Status::OK();
}

// Conv2D then BiasAdd (then Relu or Relu6), in one pass of oneDNN over the output; as
// _FusedConv2DMaxPool, then the MaxPool it fed alone, made and pooled a few images at a
// time; as _FusedConv2DMaxPoolWithArgmax, the pool's argmax too (output 1).
class FusedConv2DOp : public ConvBase {
 public:
  explicit FusedConv2DOp(OpKernelConstruction* c) : ConvBase(c) {
    Status s = ReadFusedOps(c, &relu_, &relu6_);
    if (s.ok() && relu6_ && type_string() != "_FusedConv2D") {
      s = errors::Unimplemented(type_string(), " of BiasAdd,Relu6: a pool follows only BiasAdd or BiasAdd,Relu");
    }
    argmax_ = type_string() == "_FusedConv2DMaxPoolWithArgmax";
    pooled_ = argmax_ || type_string() == "_FusedConv2DMaxPool";
    if (s.ok() && pooled_) s = ReadFusedPoolAttrs(c, &pool_);
    if (s.ok() && argmax_) s = CheckArgmaxWindow(c, pool_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& f = ctx->input(1);
    OP_REQUIRES(ctx, num_inputs() == 3,
                errors::InvalidArgument(type_string(), " with BiasAdd takes one arg, the bias"));
    const Tensor& bias = ctx->input(2);
    StatusOr<Geometry> g = ConvGeometry(attrs_, in.shape(), f.shape());
    OP_REQUIRES_OK(ctx, g.status());
    const int64_t o = f.dim(3);
    OP_REQUIRES(ctx, bias.shape() == TensorShape({o}),
                errors::InvalidArgument("Must provide as many biases as the last dimension of the input tensor: ",
                                        bias.shape().DebugString(), " vs. ", o));
    std::optional<Geometry> pool;
    if (pooled_) {
      StatusOr<Geometry> p = PoolGeometry(pool_, g->output_shape(o));
      OP_REQUIRES_OK(ctx, p.status());
      pool = *p;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, pool ? pool->output_shape(o) : g->output_shape(o), &out));
    Tensor* argmax = nullptr;
    if (argmax_) OP_REQUIRES_OK(ctx, ctx->allocate_output(1, out->shape(), &argmax));
    if (out->NumElements() == 0) return;
    if (g->kh * g->kw * g->c == 0) {  // no window: the bias alone, which pooling keeps
      ConvolveNothing(out->NumElements(), o, bias.data<float>(), out->data<float>(),
                      argmax != nullptr ? argmax->data<uint8_t>() : nullptr);
      return;
    }
    uint8_t* argmax_data = argmax != nullptr ? argmax->data<uint8_t>() : nullptr;
    if (pool && SmallConvApplies(*g, o)) {
      const BatchParts parts(ctx, g->n);
      parts.ForEach([&](int64_t, int64_t first, int64_t count) {
        SmallConvMaxPool(*g, *pool, o, in.data<float>(), f.data<float>(), bias.data<float>(), relu_, first,
                         first + count, out->data<float>(), argmax_data);
      });
      return;
    }
    OP_REQUIRES_OK(ctx, DnnlConv2D(ctx, *g, o, in.data<float>(), f.data<float>(), out->data<float>(),
                                   {bias.data<float>(), relu_, relu6_, pool ? &*pool : nullptr, argmax_data},
                                   packed_.get()));
  }

 private:
  // A convolution over no input cells: every output is the bias (after the ReLU); pooled,
  // the same, its argmax the window's first cell.
  void ConvolveNothing(int64_t count, int64_t o, const float* bias, float* out, uint8_t* argmax) const {
    for (int64_t i = 0; i < count; ++i) {
      const float v = bias[i % o];
      out[i] = relu6_ ? std::clamp(v, 0.f, 6.f) : relu_ && v < 0 ? 0.f : v;
      if (argmax != nullptr) argmax[i] = relu_ && !(v > 0) ? kNoGradient : 0;
    }
  }

  bool relu_ = false;
  bool relu6_ = false;
  bool pooled_ = false;
  bool argmax_ = false;
  PoolAttrs pool_;
};

// The gradient of a max pool's input from its pooled gradient and argmax, the batch in one
// part per intra-op thread, each zeroing its images first (unless the windows tile them)
// and summing its channels apart; and that sum, into `d_bias` [C].
Status PoolGradient(OpKernelContext* ctx, const Geometry& pool, const float* grad, const uint8_t* argmax, float* d_in,
                    float* d_bias) {
  const bool tiles = WindowsTile(pool);
  const BatchParts parts(ctx, pool.n);
  Tensor sums;
  RETURN_IF_ERROR(ctx->allocate_temp(DataType::kFloat, TensorShape({parts.count(), pool.c}), &sums));
  float* sp = sums.data<float>();
  std::fill(sp, sp + sums.NumElements(), 0.f);
  const int64_t image = pool.h * pool.w * pool.c;
  parts.ForEach([&](int64_t part, int64_t first, int64_t count) {
    if (!tiles) std::fill(d_in + first * image, d_in + (first + count) * image, 0.f);
    MaxPoolGradFromArgmax(grad, argmax, pool, first, first + count, d_in, sp + part * pool.c);
  });
  std::copy_n(sp, pool.c, d_bias);
  for (int64_t part = 1; part < parts.count(); ++part) {
    for (int64_t ci = 0; ci < pool.c; ++ci) d_bias[ci] += sp[part * pool.c + ci];
  }
  return Status::OK();
}

// The gradients of a _FusedConv2DMaxPoolWithArgmax from its pooled output's gradient and
// argmax. Inputs: the convolution's input and filter, which give the geometry, the argmax
// and the pooled gradient.
class PooledGradientOp : public ConvBase {
 public:
  explicit PooledGradientOp(OpKernelConstruction* c) : ConvBase(c) {
    Status s = ReadFusedPoolAttrs(c, &pool_);
    if (s.ok()) s = CheckArgmaxWindow(c, pool_);
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  // The convolution's and the pool's geometry, the argmax and gradient checked against them.
  Status Geometries(OpKernelContext* ctx, Geometry* conv, Geometry* pool) const {
    const Tensor& f = ctx->input(1);
    ASSIGN_OR_RETURN(*conv, ConvGeometry(attrs_, ctx->input(0).shape(), f.shape()));
    ASSIGN_OR_RETURN(*pool, PoolGeometry(pool_, conv->output_shape(f.dim(3))));
    const TensorShape pooled = pool->output_shape(pool->c);
    const Tensor& argmax = ctx->input(2);
    const Tensor& grad = ctx->input(3);
    if (grad.shape() != pooled || argmax.shape() != pooled) {
      return errors::InvalidArgument("grad and argmax must be the pooled shape ", pooled.DebugString(), ", got ",
                                     grad.shape().DebugString(), " and ", argmax.shape().DebugString());
    }
    return Status::OK();
  }

 private:
  PoolAttrs pool_;
};

// The gradient of the convolution's output (after its bias, before its ReLU): what
// MaxPoolGrad and then ReluGrad compute, in one pass that reads neither the convolution's
// output nor writes it twice; and its sum over all but the channels, the bias's gradient,
// from the pooled gradient (a quarter of the reading BiasAddGrad does for a 2x2 pool).
class FusedConv2DMaxPoolGradOp : public PooledGradientOp {
 public:
  using PooledGradientOp::PooledGradientOp;
  void Compute(OpKernelContext* ctx) override {
    Geometry conv, pool;
    OP_REQUIRES_OK(ctx, Geometries(ctx, &conv, &pool));
    Tensor *d_conv, *d_bias;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, conv.output_shape(pool.c), &d_conv));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({pool.c}), &d_bias));
    OP_REQUIRES_OK(ctx, PoolGradient(ctx, pool, ctx->input(3).data<float>(), ctx->input(2).data<uint8_t>(),
                                     d_conv->data<float>(), d_bias->data<float>()));
  }
};

// The filter's and the bias's gradients, where the convolution's output gradient is read
// by nothing else (a first layer, whose input needs none). A small convolution
// (small_conv.h) sums them without making that gradient; others make it and run
// Conv2DBackpropFilter's kernel on it.
class FusedConv2DMaxPoolBackpropFilterOp : public PooledGradientOp {
 public:
  using PooledGradientOp::PooledGradientOp;
  void Compute(OpKernelContext* ctx) override {
    Geometry conv, pool;
    OP_REQUIRES_OK(ctx, Geometries(ctx, &conv, &pool));
    const int64_t o = pool.c;
    const Tensor& in = ctx->input(0);
    const float* grad = ctx->input(3).data<float>();
    const uint8_t* argmax = ctx->input(2).data<uint8_t>();
    Tensor *d_filter, *d_bias;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(1).shape(), &d_filter));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({o}), &d_bias));
    float* df = d_filter->data<float>();
    float* db = d_bias->data<float>();
    std::fill(df, df + d_filter->NumElements(), 0.f);
    std::fill(db, db + o, 0.f);
    if (conv.n == 0 || d_filter->NumElements() == 0) return;
    if (!SmallConvApplies(conv, o)) {
      Tensor d_conv;
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataType::kFloat, conv.output_shape(o), &d_conv));
      OP_REQUIRES_OK(ctx, PoolGradient(ctx, pool, grad, argmax, d_conv.data<float>(), db));
      OP_REQUIRES_OK(ctx, DnnlConv2DBackpropFilter(ctx, conv, o, in.data<float>(), d_conv.data<float>(), df));
      return;
    }
    // Each part after the first sums into its own row of `partial`, added in afterwards.
    const BatchParts parts(ctx, conv.n);
    const int64_t filter_size = d_filter->NumElements();
    Tensor partial;
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataType::kFloat, TensorShape({parts.count(), filter_size + o}), &partial));
    float* pp = partial.data<float>();
    std::fill(pp, pp + partial.NumElements(), 0.f);
    parts.ForEach([&](int64_t part, int64_t first, int64_t count) {
      float* sums = pp + part * (filter_size + o);
      SmallConvMaxPoolBackpropFilter(conv, pool, o, in.data<float>(), grad, argmax, first, first + count, sums,
                                     sums + filter_size);
    });
    for (int64_t part = 0; part < parts.count(); ++part) {
      const float* sums = pp + part * (filter_size + o);
      for (int64_t i = 0; i < filter_size; ++i) df[i] += sums[i];
      for (int64_t ci = 0; ci < o; ++ci) db[ci] += sums[filter_size + ci];
    }
  }
};

template <typename T>
class Conv2DBackpropInputOp : public ConvBase {
 public:
  using ConvBase::ConvBase;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<TensorShape> in_shape = ShapeArgument(ctx->input(0), "input_sizes");
    OP_REQUIRES_OK(ctx, in_shape.status());
    const Tensor& f = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    StatusOr<Geometry> g = ConvBackpropGeometry(attrs_, *in_shape, f.shape(), dy);
    OP_REQUIRES_OK(ctx, g.status());
    const int64_t o = f.dim(3), rows = g->n * g->oh * g->ow, cols = g->kh * g->kw * g->c;
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *in_shape, &dx));
    if (dx->NumElements() == 0) return;
    if constexpr (std::is_same_v<T, float>) {
      if (o > 0 && rows > 0) {
        OP_REQUIRES_OK(ctx, DnnlConv2DBackpropInput(ctx, *g, o, f.data<float>(), dy.data<float>(), dx->data<float>()));
        return;
      }
    }
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
    StatusOr<TensorShape> f_shape = ShapeArgument(ctx->input(1), "filter_sizes");
    OP_REQUIRES_OK(ctx, f_shape.status());
    const Tensor& dy = ctx->input(2);
    StatusOr<Geometry> g = ConvBackpropGeometry(attrs_, in.shape(), *f_shape, dy);
    OP_REQUIRES_OK(ctx, g.status());
    const int64_t o = f_shape->dim(3), rows = g->n * g->oh * g->ow, cols = g->kh * g->kw * g->c;
    Tensor* df;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *f_shape, &df));
    if (df->NumElements() == 0) return;
    if (rows == 0) {
      std::fill(df->data<T>(), df->data<T>() + df->NumElements(), T(0));
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      OP_REQUIRES_OK(ctx,
                     DnnlConv2DBackpropFilter(ctx, *g, o, in.data<float>(), dy.data<float>(), df->data<float>()));
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
  explicit PoolBase(OpKernelConstruction* c) : OpKernel(c), attrs_(ReadPoolAttrs(c)) {}

 protected:
  // ForEachWindow (pooling.h) with the images spread over the intra-op pool.
  template <typename F>
  static void ForEachWindow(OpKernelContext* ctx, const Geometry& g, F fn) {
    ctx->ParallelFor(g.n, g.oh * g.ow * g.kh * g.kw * g.c,
                     [&](int64_t begin, int64_t end) { cpu::ForEachWindow(g, begin, end, fn); });
  }

  const PoolAttrs attrs_;
};

// MaxPool, or AvgPool over the window's cells inside the input (TensorFlow's SAME rule).
template <typename T, bool kMax>
class PoolOp : public PoolBase {
 public:
  using PoolBase::PoolBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    StatusOr<Geometry> g = PoolGeometry(attrs_, in.shape());
    OP_REQUIRES_OK(ctx, g.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g->output_shape(g->c), &out));
    const T* ip = in.data<T>();
    T* op = out->data<T>();
    const Geometry geo = *g;
    ctx->ParallelFor(geo.n, geo.oh * geo.ow * geo.kh * geo.kw * geo.c,
                     [&](int64_t begin, int64_t end) { PoolImages<T, kMax>(ip, geo, begin, end, op); });
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
    StatusOr<Geometry> g = PoolGradGeometry(attrs_, in.shape(), dy);
    OP_REQUIRES_OK(ctx, g.status());
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &dx));
    const Geometry geo = *g;
    // Windows that tile the input write every cell of the gradient once, so it needs neither
    // zeroing first nor adding into.
    const bool tiles = WindowsTile(geo);
    if (!tiles) std::fill(dx->data<T>(), dx->data<T>() + dx->NumElements(), T(0));
    const T* ip = in.data<T>();
    const T* gp = dy.data<T>();
    T* dp = dx->data<T>();
    ForEachWindow(ctx, geo, [&](int64_t b, int64_t y, int64_t x, int64_t iy0, int64_t iy1, int64_t ix0, int64_t ix1) {
      if (iy0 >= iy1 || ix0 >= ix1) return;
      // The window's cells in row-major order, all channels at once: each channel's maximum
      // so far and the number of the cell holding it, a strict > keeping the first of
      // equals. Selects on locals, not branches: on real activations the comparisons are
      // coin flips, and this way they vectorize.
      const int64_t channels = geo.c;
      thread_local std::vector<T> best_value;
      thread_local std::vector<int32_t> best_cell;
      thread_local std::vector<int64_t> cell_offset;  // of each cell's channel 0 in the input
      best_value.resize(channels);
      best_cell.resize(channels);
      cell_offset.clear();
      T* __restrict bv = best_value.data();
      int32_t* __restrict bc = best_cell.data();
      std::copy_n(ip + ((b * geo.h + iy0) * geo.w + ix0) * channels, channels, bv);
      std::fill_n(bc, channels, 0);
      int32_t cell_number = 0;
      for (int64_t iy = iy0; iy < iy1; ++iy) {
        for (int64_t ix = ix0; ix < ix1; ++ix, ++cell_number) {
          cell_offset.push_back(((b * geo.h + iy) * geo.w + ix) * channels);
          const T* __restrict cell = ip + cell_offset.back();
          for (int64_t ci = 0; ci < channels; ++ci) {
            const bool greater = cell[ci] > bv[ci];
            bv[ci] = greater ? cell[ci] : bv[ci];
            bc[ci] = greater ? cell_number : bc[ci];
          }
        }
      }
      const T* grad = gp + ((b * geo.oh + y) * geo.ow + x) * channels;
      if (tiles) {
        for (int32_t k = 0; k < cell_number; ++k) {
          T* __restrict dst = dp + cell_offset[k];
          for (int64_t ci = 0; ci < channels; ++ci) dst[ci] = bc[ci] == k ? grad[ci] : T(0);
        }
        return;
      }
      for (int64_t ci = 0; ci < channels; ++ci) dp[cell_offset[bc[ci]] + ci] += grad[ci];
    });
  }
};

template <typename T>
class AvgPoolGradOp : public PoolBase {
 public:
  using PoolBase::PoolBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& sizes = ctx->input(0);
    StatusOr<TensorShape> in_shape = ShapeArgument(sizes, "orig_input_shape");
    OP_REQUIRES_OK(ctx, in_shape.status());
    const Tensor& dy = ctx->input(1);
    StatusOr<Geometry> g = PoolGradGeometry(attrs_, *in_shape, dy);
    OP_REQUIRES_OK(ctx, g.status());
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
  r.Register<FusedConv2DOp>(KernelDefBuilder("_FusedConv2D").Device(kDeviceCpu).TypeConstraint<float>("T"));
  r.Register<FusedConv2DOp>(KernelDefBuilder("_FusedConv2DMaxPool").Device(kDeviceCpu).TypeConstraint<float>("T"));
  r.Register<FusedConv2DOp>(
      KernelDefBuilder("_FusedConv2DMaxPoolWithArgmax").Device(kDeviceCpu).TypeConstraint<float>("T"));
  r.Register<FusedConv2DMaxPoolGradOp>(
      KernelDefBuilder("_FusedConv2DMaxPoolGrad").Device(kDeviceCpu).TypeConstraint<float>("T"));
  r.Register<FusedConv2DMaxPoolBackpropFilterOp>(
      KernelDefBuilder("_FusedConv2DMaxPoolBackpropFilter").Device(kDeviceCpu).TypeConstraint<float>("T"));
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
