// Schemas of activations, softmax and cross-entropy, BiasAdd, convolution and pooling, and their gradients.
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

#include <limits>

namespace tessera {
namespace {

Status BiasAddGradShape(InferenceContext& c) {
  std::string format;
  RETURN_IF_ERROR(c.GetAttr("data_format", &format));
  const TensorShape& in = c.input(0);
  if (in.unknown_rank()) {
    c.set_output(0, TensorShape({-1}));
  } else if (in.rank() < 2) {
    return errors::InvalidArgument("Input tensor must be at least 2D: ", in.DebugString());
  } else {
    c.set_output(0, TensorShape({in.dim(format == "NCHW" ? 1 : in.rank() - 1)}));
  }
  return Status::OK();
}

Status SparseXentShape(InferenceContext& c) {
  const TensorShape& logits = c.input(0);
  if (!logits.unknown_rank() && logits.rank() != 2) {
    return errors::InvalidArgument("logits must be 2-D, but got shape ", logits.DebugString());
  }
  const int64_t batch = logits.unknown_rank() ? -1 : logits.dim(0);
  c.set_output(0, TensorShape({batch}));
  c.set_output(1, logits.unknown_rank() ? TensorShape({-1, -1}) : logits);
  return Status::OK();
}

// NHWC input, a window of kh x kw (-1: unknown), and `depth` output channels.
Status WindowedShape(InferenceContext& c, int64_t kh, int64_t kw, int64_t depth) {
  std::vector<int64_t> strides;
  std::string padding;
  RETURN_IF_ERROR(c.GetAttr("strides", &strides));
  RETURN_IF_ERROR(c.GetAttr("padding", &padding));
  if (strides.size() != 4) return errors::InvalidArgument("strides must have 4 elements, got ", strides.size());
  const TensorShape& in = c.input(0);
  if (in.unknown_rank()) return Status::OK();
  if (in.rank() != 4) return errors::InvalidArgument("input must be 4-D (NHWC), got ", in.DebugString());
  int64_t oh = -1, ow = -1, pad;
  if (in.dim(1) >= 0 && kh >= 0) RETURN_IF_ERROR(WindowedOutputSize(in.dim(1), kh, strides[1], padding, &oh, &pad));
  if (in.dim(2) >= 0 && kw >= 0) RETURN_IF_ERROR(WindowedOutputSize(in.dim(2), kw, strides[2], padding, &ow, &pad));
  c.set_output(0, TensorShape({in.dim(0), oh, ow, depth}));
  return Status::OK();
}

Status Conv2DShape(InferenceContext& c) {
  const TensorShape& f = c.input(1);
  if (!f.unknown_rank() && f.rank() != 4) return errors::InvalidArgument("filter must be 4-D, got ", f.DebugString());
  if (f.unknown_rank()) return WindowedShape(c, -1, -1, -1);
  const TensorShape& in = c.input(0);
  if (!in.unknown_rank() && in.rank() == 4 && in.dim(3) >= 0 && f.dim(2) >= 0 && in.dim(3) != f.dim(2)) {
    return errors::InvalidArgument("input depth must match filter depth: ", in.dim(3), " vs ", f.dim(2));
  }
  return WindowedShape(c, f.dim(0), f.dim(1), f.dim(3));
}

// DepthwiseConv2dNative: filter [KH, KW, C, M], C * M output channels.
Status DepthwiseConv2dShape(InferenceContext& c) {
  const TensorShape& f = c.input(1);
  if (!f.unknown_rank() && f.rank() != 4) return errors::InvalidArgument("filter must be 4-D, got ", f.DebugString());
  if (f.unknown_rank() || f.dim(2) < 0 || f.dim(3) < 0) return WindowedShape(c, -1, -1, -1);
  return WindowedShape(c, f.dim(0), f.dim(1), f.dim(2) * f.dim(3));
}

Status PoolShape(InferenceContext& c) {
  std::vector<int64_t> ksize;
  RETURN_IF_ERROR(c.GetAttr("ksize", &ksize));
  if (ksize.size() != 4) return errors::InvalidArgument("ksize must have 4 elements, got ", ksize.size());
  const TensorShape& in = c.input(0);
  return WindowedShape(c, ksize[1], ksize[2], in.unknown_rank() || in.rank() != 4 ? -1 : in.dim(3));
}

// _FusedConv2DMaxPool: the convolution's shape, then its pool's (and its argmax's, the same).
Status FusedConv2DMaxPoolShape(InferenceContext& c) {
  RETURN_IF_ERROR(Conv2DShape(c));
  const TensorShape conv = c.outputs()[0];
  std::vector<int64_t> ksize, strides;
  std::string padding;
  RETURN_IF_ERROR(c.GetAttr("ksize", &ksize));
  RETURN_IF_ERROR(c.GetAttr("pool_strides", &strides));
  RETURN_IF_ERROR(c.GetAttr("pool_padding", &padding));
  if (ksize.size() != 4 || strides.size() != 4) {
    return errors::InvalidArgument("ksize and pool_strides must have 4 elements");
  }
  if (conv.unknown_rank()) return Status::OK();
  int64_t ph = -1, pw = -1, pad;
  if (conv.dim(1) >= 0) RETURN_IF_ERROR(WindowedOutputSize(conv.dim(1), ksize[1], strides[1], padding, &ph, &pad));
  if (conv.dim(2) >= 0) RETURN_IF_ERROR(WindowedOutputSize(conv.dim(2), ksize[2], strides[2], padding, &pw, &pad));
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, TensorShape({conv.dim(0), ph, pw, conv.dim(3)}));
  return Status::OK();
}

// _FusedConv2DMaxPoolGrad: the convolution's output, then its bias [O].
Status FusedConv2DMaxPoolGradShape(InferenceContext& c) {
  RETURN_IF_ERROR(Conv2DShape(c));
  const TensorShape conv = c.outputs()[0];
  c.set_output(1, TensorShape({conv.unknown_rank() ? -1 : conv.dim(3)}));
  return Status::OK();
}

// _FusedConv2DMaxPoolBackpropFilter: the filter's shape, then its bias [O].
Status FusedConv2DMaxPoolBackpropFilterShape(InferenceContext& c) {
  const TensorShape& filter = c.input(1);
  if (!filter.unknown_rank() && filter.rank() != 4) {
    return errors::InvalidArgument("filter must be 4-dimensional: ", filter.DebugString());
  }
  c.set_output(0, filter);
  c.set_output(1, TensorShape({filter.unknown_rank() ? -1 : filter.dim(3)}));
  return Status::OK();
}

Status SoftmaxShape(InferenceContext& c) {
  if (!c.input(0).unknown_rank() && c.input(0).rank() < 1) {
    return errors::InvalidArgument("Shape must be at least rank 1 but is rank 0");
  }
  return UnchangedShape(c);
}

// FusedBatchNorm(V2, V3): y is x's shape; the statistics and reserve spaces are [C] (the
// third reserve space of V3 is empty).
Status FusedBatchNormShape(InferenceContext& c) {
  c.set_output(0, c.input(0));
  const TensorShape& x = c.input(0);
  const int64_t channels = x.unknown_rank() || x.rank() != 4 ? -1 : x.dim(3);
  for (int i = 1; i < c.num_outputs(); ++i) c.set_output(i, TensorShape({i == 5 ? 0 : channels}));
  return Status::OK();
}

Status BiasAddShape(InferenceContext& c) {
  std::string format;
  RETURN_IF_ERROR(c.GetAttr("data_format", &format));
  if (format != "NHWC" && format != "NCHW") {
    return errors::InvalidArgument("Unknown data_format '", format, "': use NHWC or NCHW");
  }
  const TensorShape& v = c.input(0);
  const TensorShape& b = c.input(1);
  if (!b.unknown_rank() && b.rank() != 1) {
    return errors::InvalidArgument("Shape must be rank 1 but is rank ", b.rank());
  }
  if (!v.unknown_rank() && v.rank() < 2) {
    return errors::InvalidArgument("Shape must be at least rank 2 but is rank ", v.rank());
  }
  if (!v.unknown_rank() && !b.unknown_rank()) {
    int64_t channels = v.dim(format == "NHWC" ? v.rank() - 1 : 1);
    if (channels >= 0 && b.dim(0) >= 0 && channels != b.dim(0)) {
      return errors::InvalidArgument("Dimensions must be equal, but are ", channels, " and ",
                                     b.dim(0));
    }
  }
  c.set_output(0, v);
  return Status::OK();
}


// The blocked layout's ops (runtime/blocked_layout.h). An NHWC tensor [N, H, W, C] is held
// as [N, C / B, H, W, B]: B channels of a pixel together, a block's plane of pixels together.
// The NHWC shape of a blocked one, or unknown rank where it is not 5-D.
TensorShape UnblockedShape(const TensorShape& blocked) {
  if (blocked.unknown_rank() || blocked.rank() != 5) return TensorShape::UnknownRank();
  const int64_t c = blocked.dim(1) < 0 || blocked.dim(4) < 0 ? -1 : blocked.dim(1) * blocked.dim(4);
  return TensorShape({blocked.dim(0), blocked.dim(2), blocked.dim(3), c});
}

// [N, H, W, C] as blocks of `block` channels; C must be whole blocks.
StatusOr<TensorShape> BlockedShape(const TensorShape& nhwc, int64_t block) {
  if (block != 8 && block != 16) return errors::InvalidArgument("block must be 8 or 16, got ", block);
  if (nhwc.unknown_rank()) return TensorShape({-1, -1, -1, -1, block});
  if (nhwc.rank() != 4) return errors::InvalidArgument("a blocked layout holds 4-D tensors, got ", nhwc.DebugString());
  if (nhwc.dim(3) >= 0 && nhwc.dim(3) % block != 0) {
    return errors::InvalidArgument(nhwc.dim(3), " channels are not whole blocks of ", block);
  }
  return TensorShape({nhwc.dim(0), nhwc.dim(3) < 0 ? -1 : nhwc.dim(3) / block, nhwc.dim(1), nhwc.dim(2), block});
}

// Channels that are not whole blocks are padded to the next whole block.
Status ToBlockedShape(InferenceContext& c) {
  int64_t block;
  RETURN_IF_ERROR(c.GetAttr("block", &block));
  TensorShape in = c.input(0);
  if (block > 0 && !in.unknown_rank() && in.rank() == 4 && in.dim(3) > 0 &&
      in.dim(3) <= std::numeric_limits<int64_t>::max() - block) {
    in.set_dim(3, (in.dim(3) + block - 1) / block * block);
  }
  ASSIGN_OR_RETURN(TensorShape out, BlockedShape(in, block));
  c.set_output(0, out);
  return Status::OK();
}

// `channels` > 0: the real channels, the rest of the last block padding.
Status FromBlockedShape(InferenceContext& c) {
  int64_t channels;
  RETURN_IF_ERROR(c.GetAttr("channels", &channels));
  TensorShape out = UnblockedShape(c.input(0));
  if (channels > 0 && !out.unknown_rank()) out.set_dim(3, channels);
  c.set_output(0, out);
  return Status::OK();
}

// A blocked op's shape: its NHWC form's, blocked. `nhwc_shape` sees input 0 unblocked (or as
// it is, where the op reads NHWC).
Status BlockedWindowShape(InferenceContext& c, const ShapeFn& nhwc_shape, bool nhwc_input = false) {
  int64_t block;
  RETURN_IF_ERROR(c.GetAttr("block", &block));
  std::vector<TensorShape> inputs;
  std::vector<const Tensor*> values;
  for (int i = 0; i < c.num_inputs(); ++i) {
    inputs.push_back(i == 0 && !nhwc_input ? UnblockedShape(c.input(0)) : c.input(i));
    values.push_back(c.input_tensor(i));
  }
  InferenceContext nhwc("", c.attrs(), std::move(inputs), std::move(values), 1);
  RETURN_IF_ERROR(nhwc_shape(nhwc));
  ASSIGN_OR_RETURN(TensorShape out, BlockedShape(nhwc.outputs()[0], block));
  c.set_output(0, out);
  return Status::OK();
}

Status BlockedConvShape(InferenceContext& c) {
  int64_t depthwise;
  std::string input_layout;
  RETURN_IF_ERROR(c.GetAttr("depthwise", &depthwise));
  RETURN_IF_ERROR(c.GetAttr("input_layout", &input_layout));
  if (input_layout != "blocked" && input_layout != "NHWC") {
    return errors::InvalidArgument("input_layout must be blocked or NHWC, got '", input_layout, "'");
  }
  if (input_layout == "NHWC" && depthwise != 0) {
    return errors::Unimplemented("a depthwise convolution from an NHWC input to a blocked output");
  }
  return BlockedWindowShape(c, depthwise > 0 ? DepthwiseConv2dShape : Conv2DShape, input_layout == "NHWC");
}

Status BlockedPoolShape(InferenceContext& c) { return BlockedWindowShape(c, PoolShape); }

}  // namespace

void RegisterNnOps(OpRegistry& r) {
  RegisterCoreOp(r, OpDefBuilder("Relu").Input("features: T").Output("activations: T").Attr(kNumeric)
                  .SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("Relu6").Input("features: T").Output("activations: T").Attr(kNumeric)
                  .SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("Softmax").Input("logits: T").Output("softmax: T").Attr(kFloating)
                  .SetShapeFn(SoftmaxShape));
  RegisterCoreOp(r, OpDefBuilder("LogSoftmax").Input("logits: T").Output("logsoftmax: T").Attr(kFloating)
                  .SetShapeFn(SoftmaxShape));
  RegisterCoreOp(r, OpDefBuilder("SparseSoftmaxCrossEntropyWithLogits").Input("features: T").Input("labels: Tlabels")
                  .Output("loss: T").Output("backprop: T").Attr(kFloating).Attr("Tlabels: {int32, int64} = int64")
                  .SetShapeFn(SparseXentShape));

  RegisterCoreOp(r, OpDefBuilder("BiasAdd").Input("value: T").Input("bias: T").Output("output: T")
                  .Attr(kNumeric).Attr("data_format: string = \"NHWC\"").SetShapeFn(BiasAddShape));

  // Batch normalisation with given statistics (is_training = false), as inference graphs hold
  // it; every version TensorFlow has written, V3's third reserve space empty.
  for (const char* name : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}) {
    const bool v1 = std::string_view(name) == "FusedBatchNorm";
    const std::string u = v1 ? "T" : "U";
    OpDefBuilder b(name);
    b.Input("x: T").Input("scale: " + u).Input("offset: " + u).Input("mean: " + u).Input("variance: " + u)
        .Output("y: T").Output("batch_mean: " + u).Output("batch_variance: " + u)
        .Output("reserve_space_1: " + u).Output("reserve_space_2: " + u);
    if (std::string_view(name) == "FusedBatchNormV3") b.Output("reserve_space_3: " + u);
    b.Attr("T: {float32}");
    if (!v1) b.Attr("U: {float32}");
    b.Attr("epsilon: float = 0.0001").Attr("exponential_avg_factor: float = 1.0")
        .Attr("data_format: string = \"NHWC\"").Attr("is_training: bool = true").SetShapeFn(FusedBatchNormShape);
    RegisterCoreOp(r, b);
  }

  // Convolution and pooling, NHWC, with TensorFlow's SAME/VALID windows.
  RegisterCoreOp(r, OpDefBuilder("Conv2D").Input("input: T").Input("filter: T").Output("output: T").Attr(kFloating)
                  .Attr("strides: list(int)").Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").SetShapeFn(Conv2DShape));
  // Each input channel convolved with its own M filters (MobileNet's and EfficientNet's).
  RegisterCoreOp(r, OpDefBuilder("DepthwiseConv2dNative").Input("input: T").Input("filter: T").Output("output: T")
                  .Attr(kFloating).Attr("strides: list(int)").Attr("padding: string")
                  .Attr("data_format: string = \"NHWC\"").Attr("dilations: list(int) = [1, 1, 1, 1]")
                  .SetShapeFn(DepthwiseConv2dShape));
  // Conv2D with the ops that followed it applied as it writes, made by the remapper
  // (runtime/remapper.h); args are the bias. fused_ops is TensorFlow's list comma-joined,
  // "BiasAdd" or "BiasAdd,Relu": Tessera's attrs have no list(string).
  RegisterCoreOp(r, OpDefBuilder("_FusedConv2D").Input("input: T").Input("filter: T").Input("args: num_args * T")
                  .Output("output: T").Attr("T: {float32}").Attr("num_args: int >= 0").Attr("strides: list(int)")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").Attr("fused_ops: string")
                  .Attr("epsilon: float = 0.0001").SetShapeFn(Conv2DShape));
  // DepthwiseConv2dNative with a BiasAdd and a Relu or Relu6 after it applied as it writes
  // (TensorFlow's CPU fusion of that name, made by the remapper on a CPU).
  RegisterCoreOp(r, OpDefBuilder("_FusedDepthwiseConv2dNative").Input("input: T").Input("filter: T")
                  .Input("args: num_args * T").Output("output: T").Attr("T: {float32}").Attr("num_args: int >= 0")
                  .Attr("strides: list(int)").Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").Attr("fused_ops: string")
                  .Attr("epsilon: float = 0.0001").SetShapeFn(DepthwiseConv2dShape));
  // Runtime-internal: a _FusedConv2D and the MaxPool that alone reads it, made and pooled a
  // few images at a time (runtime/remapper.h); the pool's attrs are ksize, pool_strides
  // and pool_padding.
  RegisterCoreOp(r, OpDefBuilder("_FusedConv2DMaxPool").Input("input: T").Input("filter: T")
                  .Input("args: num_args * T").Output("output: T").Attr("T: {float32}").Attr("num_args: int >= 0")
                  .Attr("strides: list(int)").Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").Attr("fused_ops: string")
                  .Attr("epsilon: float = 0.0001").Attr("ksize: list(int)").Attr("pool_strides: list(int)")
                  .Attr("pool_padding: string").SetShapeFn(FusedConv2DMaxPoolShape));
  // Runtime-internal, for training: _FusedConv2DMaxPool that also gives each pooled value's
  // argmax (devices/cpu/pooling.h), and the gradient of the convolution's (biased) output
  // from it, which replaces the pool's MaxPoolGrad and the ReluGrad after it
  // (runtime/remapper.h), and the bias's gradient, which replaces the BiasAddGrad. The
  // gradient reads `input` and `filter` for their shapes alone; the argmax says where a ReLU
  // stopped the gradient.
  RegisterCoreOp(r, OpDefBuilder("_FusedConv2DMaxPoolWithArgmax").Input("input: T").Input("filter: T")
                  .Input("args: num_args * T").Output("output: T").Output("argmax: uint8").Attr("T: {float32}")
                  .Attr("num_args: int >= 0").Attr("strides: list(int)").Attr("padding: string")
                  .Attr("data_format: string = \"NHWC\"").Attr("dilations: list(int) = [1, 1, 1, 1]")
                  .Attr("fused_ops: string").Attr("epsilon: float = 0.0001").Attr("ksize: list(int)")
                  .Attr("pool_strides: list(int)").Attr("pool_padding: string").SetShapeFn(FusedConv2DMaxPoolShape));
  RegisterCoreOp(r, OpDefBuilder("_FusedConv2DMaxPoolGrad").Input("input: T").Input("filter: T")
                  .Input("argmax: uint8").Input("grad: T").Output("backprops: T").Output("bias_backprop: T")
                  .Attr("T: {float32}")
                  .Attr("strides: list(int)").Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").Attr("ksize: list(int)")
                  .Attr("pool_strides: list(int)").Attr("pool_padding: string").SetShapeFn(FusedConv2DMaxPoolGradShape));
  RegisterCoreOp(r, OpDefBuilder("_FusedConv2DMaxPoolBackpropFilter").Input("input: T").Input("filter: T")
                  .Input("argmax: uint8").Input("grad: T").Output("filter_backprop: T").Output("bias_backprop: T")
                  .Attr("T: {float32}")
                  .Attr("strides: list(int)").Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").Attr("ksize: list(int)")
                  .Attr("pool_strides: list(int)").Attr("pool_padding: string")
                  .SetShapeFn(FusedConv2DMaxPoolBackpropFilterShape));
  RegisterCoreOp(r, OpDefBuilder("Conv2DBackpropInput").Input("input_sizes: int32").Input("filter: T")
                  .Input("out_backprop: T").Output("output: T").Attr(kFloating).Attr("strides: list(int)")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").SetShapeFn(ShapeFromInput0));
  RegisterCoreOp(r, OpDefBuilder("Conv2DBackpropFilter").Input("input: T").Input("filter_sizes: int32")
                  .Input("out_backprop: T").Output("output: T").Attr(kFloating).Attr("strides: list(int)")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").SetShapeFn(ShapeFromInput1));
  // DepthwiseConv2dNative's gradients, as Conv2D's.
  RegisterCoreOp(r, OpDefBuilder("DepthwiseConv2dNativeBackpropInput").Input("input_sizes: int32").Input("filter: T")
                  .Input("out_backprop: T").Output("output: T").Attr(kFloating).Attr("strides: list(int)")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").SetShapeFn(ShapeFromInput0));
  RegisterCoreOp(r, OpDefBuilder("DepthwiseConv2dNativeBackpropFilter").Input("input: T").Input("filter_sizes: int32")
                  .Input("out_backprop: T").Output("output: T").Attr(kFloating).Attr("strides: list(int)")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").SetShapeFn(ShapeFromInput1));
  for (const char* op : {"MaxPool", "AvgPool"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input(std::string_view(op) == "MaxPool" ? "input: T" : "value: T")
                    .Output("output: T").Attr(kFloating).Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4")
                    .Attr("padding: string").Attr("data_format: string = \"NHWC\"").SetShapeFn(PoolShape));
  }
  RegisterCoreOp(r, OpDefBuilder("MaxPoolGrad").Input("orig_input: T").Input("orig_output: T").Input("grad: T")
                  .Output("output: T").Attr(kFloating).Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"").SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("AvgPoolGrad").Input("orig_input_shape: int32").Input("grad: T").Output("output: T")
                  .Attr(kFloating).Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"").SetShapeFn(ShapeFromInput0));

  // The ops gradient functions (graph/math_grad.cc, graph/nn_grad.cc) build on.
  RegisterCoreOp(r, OpDefBuilder("ReluGrad").Input("gradients: T").Input("features: T").Output("backprops: T")
                  .Attr(kNumeric).SetShapeFn(UnchangedShape));
  RegisterCoreOp(r, OpDefBuilder("BiasAddGrad").Input("out_backprop: T").Output("output: T").Attr(kNumeric)
                  .Attr("data_format: string = \"NHWC\"").SetShapeFn(BiasAddGradShape));

  // x * scale + offset, then `activation` ("", "Relu" or "Relu6"), in one pass: a frozen
  // batch normalisation before a convolution (runtime/remapper.h). scale and offset have one
  // shape but for leading 1s ([C] and [1, 1, 1, C]), which broadcasts into x's.
  RegisterCoreOp(r, OpDefBuilder("_FusedScaleOffset").Input("x: T").Input("scale: T").Input("offset: T")
                  .Output("y: T").Attr("T: {float32}").Attr("activation: string = \"\"").SetShapeFn(UnchangedShape));
  // x * sigmoid(x) in one pass: swish (SiLU), which TensorFlow writes as a Sigmoid and a Mul
  // (runtime/remapper.h).
  RegisterCoreOp(r, OpDefBuilder("_Swish").Input("x: T").Output("y: T").Attr("T: {float32, float64}")
                  .SetShapeFn(UnchangedShape));
  // Runtime-internal: the blocked layout (runtime/blocked_layout.h). An NHWC tensor into
  // blocks of `block` channels and back; a convolution (depthwise: of that channel
  // multiplier; 0, a full one) with its fused_ops ("", "BiasAdd", "BiasAdd,Relu",
  // "BiasAdd,Relu6", and "BiasAdd,Add" or "BiasAdd,Add,Relu" whose second arg is a
  // residual summand; input_layout NHWC reads a plain NHWC input of any channels, a first
  // layer's) and a MaxPool or AvgPool (`pooling` MAX or AVG) over blocked tensors.
  RegisterCoreOp(r, OpDefBuilder("_ToBlocked").Input("input: T").Output("output: T").Attr("T: {float32}")
                  .Attr("block: int").SetShapeFn(ToBlockedShape));
  RegisterCoreOp(r, OpDefBuilder("_FromBlocked").Input("input: T").Output("output: T").Attr("T: {float32}")
                  .Attr("channels: int = 0").SetShapeFn(FromBlockedShape));
  RegisterCoreOp(r, OpDefBuilder("_BlockedConv2D").Input("input: T").Input("filter: T").Input("args: num_args * T")
                  .Output("output: T").Attr("T: {float32}").Attr("num_args: int >= 0").Attr("strides: list(int)")
                  .Attr("padding: string").Attr("data_format: string = \"NHWC\"")
                  .Attr("dilations: list(int) = [1, 1, 1, 1]").Attr("fused_ops: string = \"\"")
                  .Attr("depthwise: int = 0").Attr("block: int").Attr("input_layout: string = \"blocked\"")
                  .SetShapeFn(BlockedConvShape));
  RegisterCoreOp(r, OpDefBuilder("_BlockedPool").Input("input: T").Output("output: T").Attr("T: {float32}")
                  .Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4").Attr("padding: string")
                  .Attr("data_format: string = \"NHWC\"").Attr("pooling: string").Attr("block: int")
                  .SetShapeFn(BlockedPoolShape));
}

}  // namespace tessera
