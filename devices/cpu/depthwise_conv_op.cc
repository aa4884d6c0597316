// DepthwiseConv2dNative on the CPU, NHWC: output channel c * M + m is input channel c
// convolved with filter [:, :, c, m]; as _FusedDepthwiseConv2dNative, then its bias and
// Relu or Relu6 (runtime/remapper.h). float32 through oneDNN (dnnl_conv.h); double here, one
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

template <typename T>
class DepthwiseConv2dOp : public OpKernel {
 public:
  explicit DepthwiseConv2dOp(OpKernelConstruction* c) : OpKernel(c), attrs_(ReadConvAttrs(c)) {
    std::string format;
    std::vector<int64_t> dilations;
    Status s = c->GetAttr("data_format", &format);
    if (s.ok()) s = c->GetAttr("dilations", &dilations);
    if (s.ok() && format != "NHWC") s = errors::Unimplemented("DepthwiseConv2dNative in ", format, "; Tessera runs NHWC");
    for (int64_t d : dilations) {
      if (s.ok() && d != 1) s = errors::Unimplemented("DepthwiseConv2dNative with dilations other than 1");
    }
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

}  // namespace

void RegisterDepthwiseConvKernels(KernelRegistry& r) {
  r.Register<DepthwiseConv2dOp<float>>(
      KernelDefBuilder("DepthwiseConv2dNative").Device(kDeviceCpu).TypeConstraint<float>("T"));
  r.Register<DepthwiseConv2dOp<float>>(
      KernelDefBuilder("_FusedDepthwiseConv2dNative").Device(kDeviceCpu).TypeConstraint<float>("T"));
  r.Register<DepthwiseConv2dOp<double>>(
      KernelDefBuilder("DepthwiseConv2dNative").Device(kDeviceCpu).TypeConstraint<double>("T"));
}

}  // namespace tessera::cpu
