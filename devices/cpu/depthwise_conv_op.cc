// DepthwiseConv2dNative on the CPU, NHWC: output channel c * M + m is input channel c
// convolved with filter [:, :, c, m]; as _FusedDepthwiseConv2dNative, then its bias and
// Relu or Relu6 (runtime/remapper.h); and its two gradients. float32 through oneDNN (dnnl_conv.h); double here, one
// output row of one image per unit of work, the innermost loop over the channels,
// contiguous in both input and filter.
#include <memory>
#include <type_traits>

#include "devices/cpu/cpu_kernels.h"
#include "devices/cpu/dnnl_conv.h"
#include "graph/op_kinds.h"
#include "kernels/util/conv_geometry.h"
#include "kernels/util/fused_ops.h"

namespace tessera::cpu {
namespace {

// What the depthwise kernels run: NHWC, no dilation.
Status CheckLayout(OpKernelConstruction* c) {
  std::string format;
  std::vector<int64_t> dilations;
  RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  RETURN_IF_ERROR(c->GetAttr("dilations", &dilations));
  if (format != "NHWC") return errors::Unimplemented(c->node().op(), " in ", format, "; Tessera runs NHWC");
  for (int64_t d : dilations) {
    if (d != 1) return errors::Unimplemented(c->node().op(), " with dilations other than 1");
  }
  return Status::OK();
}

template <typename T>
class DepthwiseConv2dOp : public OpKernel {
 public:
  explicit DepthwiseConv2dOp(OpKernelConstruction* c) : OpKernel(c), attrs_(ReadConvAttrs(c)) {
    Status s = CheckLayout(c);
    if (s.ok() && fused_) s = ReadFusedOps(c, &relu_, &relu6_);
    if (!s.ok()) c->SetStatus(s);
    const Edge* filter = c->node().input_edge(1);
    if (filter != nullptr && IsConstant(filter->src->op())) packed_ = std::make_unique<PackedFilter>();
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& f = ctx->input(1);
    OP_REQUIRES(ctx, in.rank() == 4 && f.rank() == 4,
                errors::InvalidArgument("DepthwiseConv2dNative takes a 4-D input and filter, got ",
                                        in.shape().DebugString(), " and ", f.shape().DebugString()));
    OP_REQUIRES(ctx, in.dim(3) == f.dim(2),
                errors::InvalidArgument("input depth must match filter depth: ", in.dim(3), " vs ", f.dim(2)));
    StatusOr<Geometry> g = MakeGeometry(in.shape(), f.dim(0), f.dim(1), attrs_.strides, attrs_.padding);
    OP_REQUIRES_OK(ctx, g.status());
    const int64_t channels = in.dim(3), m = f.dim(3), out_c = channels * m;
    ConvEpilogue epilogue;
    if (fused_) {
      OP_REQUIRES(ctx, num_inputs() == 3 && ctx->input(2).shape() == TensorShape({out_c}),
                  errors::InvalidArgument(type_string(), " takes one arg, a bias of ", out_c, " values"));
      epilogue = {ctx->input(2).data<float>(), relu_, relu6_};
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g->output_shape(out_c), &out));
    if (out->NumElements() == 0) return;
    // Not empty: windows are at least 1x1 (MakeGeometry), and so are the channels.
    if constexpr (std::is_same_v<T, float>) {
      OP_REQUIRES_OK(ctx, DnnlDepthwiseConv2D(ctx, *g, m, in.data<float>(), f.data<float>(), out->data<float>(),
                                              epilogue, packed_.get()));
      return;
    }
    const T* x = in.data<T>();
    const T* w = f.data<T>();
    T* y = out->data<T>();
    const Geometry geo = *g;
    ctx->ParallelFor(geo.n * geo.oh, geo.ow * geo.kh * geo.kw * out_c, [&](int64_t begin, int64_t end) {
      std::vector<T> acc(static_cast<size_t>(out_c));
      for (int64_t row = begin; row < end; ++row) {
        const int64_t b = row / geo.oh, oy = row % geo.oh;
        for (int64_t ox = 0; ox < geo.ow; ++ox) {
          std::fill(acc.begin(), acc.end(), T(0));
          for (int64_t ky = 0; ky < geo.kh; ++ky) {
            const int64_t iy = oy * geo.sh + ky - geo.pad_top;
            if (iy < 0 || iy >= geo.h) continue;
            for (int64_t kx = 0; kx < geo.kw; ++kx) {
              const int64_t ix = ox * geo.sw + kx - geo.pad_left;
              if (ix < 0 || ix >= geo.w) continue;
              const T* xp = x + ((b * geo.h + iy) * geo.w + ix) * channels;
              const T* wp = w + (ky * geo.kw + kx) * out_c;
              if (m == 1) {
                for (int64_t c = 0; c < channels; ++c) acc[c] += xp[c] * wp[c];
              } else {
                for (int64_t c = 0; c < channels; ++c) {
                  for (int64_t j = 0; j < m; ++j) acc[c * m + j] += xp[c] * wp[c * m + j];
                }
              }
            }
          }
          std::copy(acc.begin(), acc.end(), y + ((b * geo.oh + oy) * geo.ow + ox) * out_c);
        }
      }
    });
  }

 private:
  const ConvAttrs attrs_;
  const bool fused_ = type_string() == "_FusedDepthwiseConv2dNative";
  bool relu_ = false, relu6_ = false;
  std::unique_ptr<PackedFilter> packed_;  // where the filter is a constant
};

// DepthwiseConv2dNativeBackpropInput (inputs input_sizes, filter, out_backprop) and
// ...BackpropFilter (input, filter_sizes, out_backprop): float32 through oneDNN, double by
// the forward loops turned round (one image a unit of work for the input's gradient; the
// filter's, which every image adds to, on one thread).
template <typename T, bool kInput>
class DepthwiseConv2dBackpropOp : public OpKernel {
 public:
  explicit DepthwiseConv2dBackpropOp(OpKernelConstruction* c) : OpKernel(c), attrs_(ReadConvAttrs(c)) {
    Status s = CheckLayout(c);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    StatusOr<TensorShape> in_shape = kInput ? ShapeArgument(ctx->input(0), "input_sizes") : ctx->input(0).shape();
    StatusOr<TensorShape> f_shape = kInput ? ctx->input(1).shape() : ShapeArgument(ctx->input(1), "filter_sizes");
    OP_REQUIRES_OK(ctx, in_shape.status());
    OP_REQUIRES_OK(ctx, f_shape.status());
    OP_REQUIRES(ctx, in_shape->rank() == 4 && f_shape->rank() == 4 && in_shape->dim(3) == f_shape->dim(2),
                errors::InvalidArgument(type_string(), " '", name(), "' takes a 4-D input and filter of one depth, got ",
                                        in_shape->DebugString(), " and ", f_shape->DebugString()));
    StatusOr<Geometry> g = MakeGeometry(*in_shape, f_shape->dim(0), f_shape->dim(1), attrs_.strides, attrs_.padding);
    OP_REQUIRES_OK(ctx, g.status());
    const int64_t m = f_shape->dim(3), out_c = g->c * m;
    const Tensor& dy = ctx->input(2);
    OP_REQUIRES(ctx, dy.shape() == g->output_shape(out_c),
                errors::InvalidArgument(type_string(), " '", name(), "': out_backprop is ", dy.shape().DebugString(),
                                        ", the convolution's output ", g->output_shape(out_c).DebugString()));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, kInput ? *in_shape : *f_shape, &out));
    if (out->NumElements() == 0) return;
    if (dy.NumElements() == 0) {
      std::fill(out->data<T>(), out->data<T>() + out->NumElements(), T(0));
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      OP_REQUIRES_OK(ctx, kInput ? DnnlDepthwiseConv2DBackpropInput(ctx, *g, m, ctx->input(1).data<float>(),
                                                                    dy.data<float>(), out->data<float>())
                                 : DnnlDepthwiseConv2DBackpropFilter(ctx, *g, m, ctx->input(0).data<float>(),
                                                                     dy.data<float>(), out->data<float>()));
      return;
    }
    std::fill(out->data<T>(), out->data<T>() + out->NumElements(), T(0));
    const Geometry geo = *g;
    // Calls add(image, input offset, filter offset, d_out offset) for every product the
    // forward convolution makes.
    auto each = [&](int64_t b, auto&& add) {
      for (int64_t oy = 0; oy < geo.oh; ++oy) {
        for (int64_t ox = 0; ox < geo.ow; ++ox) {
          for (int64_t ky = 0; ky < geo.kh; ++ky) {
            const int64_t iy = oy * geo.sh + ky - geo.pad_top;
            if (iy < 0 || iy >= geo.h) continue;
            for (int64_t kx = 0; kx < geo.kw; ++kx) {
              const int64_t ix = ox * geo.sw + kx - geo.pad_left;
              if (ix < 0 || ix >= geo.w) continue;
              const int64_t x_at = ((b * geo.h + iy) * geo.w + ix) * geo.c, f_at = (ky * geo.kw + kx) * out_c;
              const int64_t y_at = ((b * geo.oh + oy) * geo.ow + ox) * out_c;
              for (int64_t c = 0; c < geo.c; ++c) {
                for (int64_t j = 0; j < m; ++j) add(x_at + c, f_at + c * m + j, y_at + c * m + j);
              }
            }
          }
        }
      }
    };
    const T* d = dy.data<T>();
    T* o = out->data<T>();
    if constexpr (kInput) {
      const T* w = ctx->input(1).data<T>();
      ctx->ParallelFor(geo.n, geo.oh * geo.ow * geo.kh * geo.kw * out_c, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) each(b, [&](int64_t xi, int64_t fi, int64_t yi) { o[xi] += d[yi] * w[fi]; });
      });
    } else {
      const T* x = ctx->input(0).data<T>();
      for (int64_t b = 0; b < geo.n; ++b) each(b, [&](int64_t xi, int64_t fi, int64_t yi) { o[fi] += x[xi] * d[yi]; });
    }
  }

 private:
  const ConvAttrs attrs_;
};

}  // namespace

void RegisterDepthwiseConvKernels(KernelRegistry& r) {
  r.Register<DepthwiseConv2dOp<float>>(
      KernelDefBuilder("DepthwiseConv2dNative").Device(kDeviceCpu).TypeConstraint<float>("T"));
  r.Register<DepthwiseConv2dOp<float>>(
      KernelDefBuilder("_FusedDepthwiseConv2dNative").Device(kDeviceCpu).TypeConstraint<float>("T"));
  r.Register<DepthwiseConv2dOp<double>>(
      KernelDefBuilder("DepthwiseConv2dNative").Device(kDeviceCpu).TypeConstraint<double>("T"));
  r.Register<DepthwiseConv2dBackpropOp<float, true>>(
      KernelDefBuilder("DepthwiseConv2dNativeBackpropInput").Device(kDeviceCpu).TypeConstraint<float>("T"));
  r.Register<DepthwiseConv2dBackpropOp<double, true>>(
      KernelDefBuilder("DepthwiseConv2dNativeBackpropInput").Device(kDeviceCpu).TypeConstraint<double>("T"));
  r.Register<DepthwiseConv2dBackpropOp<float, false>>(
      KernelDefBuilder("DepthwiseConv2dNativeBackpropFilter").Device(kDeviceCpu).TypeConstraint<float>("T"));
  r.Register<DepthwiseConv2dBackpropOp<double, false>>(
      KernelDefBuilder("DepthwiseConv2dNativeBackpropFilter").Device(kDeviceCpu).TypeConstraint<double>("T"));
}

}  // namespace tessera::cpu
