#include "kernels/util/conv_geometry.h"

#include "graph/shape_inference.h"

namespace tessera {

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

namespace {

StatusOr<ConvAttrs> ConvAttrsOf(OpKernelConstruction* c) {
  ConvAttrs attrs;
  std::string format;
  std::vector<int64_t> dilations;
  RETURN_IF_ERROR(c->GetAttr("strides", &attrs.strides));
  RETURN_IF_ERROR(c->GetAttr("padding", &attrs.padding));
  RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  RETURN_IF_ERROR(c->GetAttr("dilations", &dilations));
  if (format != "NHWC") {
    return errors::Unimplemented(c->node().op(), " on ", c->device()->device_type(), " supports data_format NHWC, not ", format);
  }
  if (dilations != std::vector<int64_t>{1, 1, 1, 1}) {
    return errors::Unimplemented(c->node().op(), " supports dilations [1, 1, 1, 1] only");
  }
  return attrs;
}

StatusOr<PoolAttrs> PoolAttrsOf(OpKernelConstruction* c) {
  PoolAttrs attrs;
  std::string format;
  RETURN_IF_ERROR(c->GetAttr("ksize", &attrs.ksize));
  RETURN_IF_ERROR(c->GetAttr("strides", &attrs.strides));
  RETURN_IF_ERROR(c->GetAttr("padding", &attrs.padding));
  RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  if (format != "NHWC") {
    return errors::Unimplemented("Pooling on ", c->device()->device_type(), " supports data_format NHWC, not ", format);
  }
  if (attrs.ksize.size() != 4 || attrs.ksize[0] != 1 || attrs.ksize[3] != 1) {
    return errors::InvalidArgument("ksize must be [1, kh, kw, 1]");
  }
  return attrs;
}

template <typename Attrs>
Attrs OrFail(OpKernelConstruction* c, StatusOr<Attrs> attrs) {
  if (attrs.ok()) return *std::move(attrs);
  c->SetStatus(attrs.status());
  return Attrs();
}

}  // namespace

ConvAttrs ReadConvAttrs(OpKernelConstruction* c) { return OrFail(c, ConvAttrsOf(c)); }
PoolAttrs ReadPoolAttrs(OpKernelConstruction* c) { return OrFail(c, PoolAttrsOf(c)); }

StatusOr<Geometry> ConvGeometry(const ConvAttrs& attrs, const TensorShape& in, const TensorShape& f) {
  if (f.rank() != 4) return errors::InvalidArgument("filter must be 4-D [KH, KW, C, O], got ", f.DebugString());
  ASSIGN_OR_RETURN(Geometry g, MakeGeometry(in, f.dim(0), f.dim(1), attrs.strides, attrs.padding));
  if (f.dim(2) != g.c) {
    return errors::InvalidArgument("input depth must match filter depth: ", g.c, " vs ", f.dim(2), " (input ",
                                   in.DebugString(), ", filter ", f.DebugString(), ")");
  }
  return g;
}

StatusOr<TensorShape> ShapeArgument(const Tensor& t, std::string_view what) {
  if (t.rank() != 1 || t.NumElements() != 4) return errors::InvalidArgument(what, " must be a 4-vector");
  return TensorShape::Make(IntTensorValues(t));
}

namespace {

// InvalidArgument unless the gradient `what` has `expected` shape.
Status CheckGradientShape(const Tensor& grad, const TensorShape& expected, std::string_view what) {
  if (grad.shape() == expected) return Status::OK();
  return errors::InvalidArgument(what, " has shape ", grad.shape().DebugString(), ", expected ", expected.DebugString());
}

}  // namespace

StatusOr<Geometry> ConvBackpropGeometry(const ConvAttrs& attrs, const TensorShape& in, const TensorShape& f,
                                        const Tensor& out_backprop) {
  ASSIGN_OR_RETURN(Geometry g, ConvGeometry(attrs, in, f));
  RETURN_IF_ERROR(CheckGradientShape(out_backprop, g.output_shape(f.dim(3)), "out_backprop"));
  return g;
}

StatusOr<Geometry> PoolGradGeometry(const PoolAttrs& attrs, const TensorShape& in, const Tensor& grad) {
  ASSIGN_OR_RETURN(Geometry g, PoolGeometry(attrs, in));
  RETURN_IF_ERROR(CheckGradientShape(grad, g.output_shape(g.c), "grad"));
  return g;
}

}  // namespace tessera
