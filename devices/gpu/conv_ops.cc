// Conv2D, _FusedConv2D (the remapper's Conv2D, BiasAdd and Relu) and the two backprops on
// cuDNN, MaxPool, AvgPool and their gradients on our own kernels (devices/gpu/pool.cu). The
// tensors are NHWC as on the CPU; cuDNN runs in NCHW, as TensorFlow's GPU kernels run
// float32 (its NHWC float32 kernels took twice as long on the CNN's second convolution), so
// each tensor is transposed on the way in and out, a fused bias and ReLU applied on the way
// out. TensorFlow's filters are [KH, KW, C, O], cuDNN's [O, C, KH, KW]. TensorFlow's SAME
// padding puts any odd row or column below and to the right, which cuDNN's symmetric
// padding cannot say: the input is padded by that row and column first, and the input
// gradient cropped after, as TensorFlow's GPU kernels do. Algorithms are autotuned once per
// shape.
#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>

#include "devices/gpu/gpu_op_kernel.h"
#include "devices/gpu/launch.h"
#include "kernels/util/conv_geometry.h"
#include "kernels/util/fused_ops.h"

namespace tessera::gpu {
namespace {

template <typename T>
constexpr cudnnDataType_t kCudnnType = std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;

// The descriptors of one convolution, destroyed with it.
struct ConvDescriptors {
  cudnnTensorDescriptor_t input = nullptr, output = nullptr;
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ConvDescriptors() = default;
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
  ~ConvDescriptors() {
    if (input != nullptr) cudnnDestroyTensorDescriptor(input);
    if (output != nullptr) cudnnDestroyTensorDescriptor(output);
    if (filter != nullptr) cudnnDestroyFilterDescriptor(filter);
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
  }
};

// A convolution as cuDNN runs it: over the input padded below and to the right where
// TensorFlow's padding is uneven, with the symmetric rest left to cuDNN.
struct CudnnConv {
  Geometry g;          // of the original input
  int64_t o = 0;       // output channels
  NhwcPadding extra{};  // what is added below and to the right before cuDNN sees the input
  bool padded() const { return extra.bottom > 0 || extra.right > 0; }
  TensorShape padded_input_shape() const {
    return TensorShape({g.n, g.h + extra.bottom, g.w + extra.right, g.c});
  }
  std::array<int64_t, 11> key() const {
    return {g.n, g.h, g.w, g.c, o, g.kh, g.kw, g.sh, g.sw, g.pad_top, g.pad_left};
  }
};

CudnnConv MakeCudnnConv(const Geometry& g, int64_t o) {
  CudnnConv c{g, o, {g.n, g.h, g.w, g.c, 0, 0}};
  c.extra.bottom = std::max<int64_t>(g.pad_bottom() - g.pad_top, 0);
  c.extra.right = std::max<int64_t>(g.pad_right() - g.pad_left, 0);
  return c;
}

bool FitsInt(std::initializer_list<int64_t> values) {
  for (int64_t v : values) {
    if (v > INT32_MAX) return false;
  }
  return true;
}

template <typename T>
Status Describe(const CudnnConv& c, bool allow_tf32, ConvDescriptors* d) {
  const int64_t h = c.g.h + c.extra.bottom, w = c.g.w + c.extra.right;
  if (!FitsInt({c.g.n, h, w, c.g.c, c.o, c.g.kh, c.g.kw, c.g.sh, c.g.sw, c.g.n * h * w * c.g.c})) {
    return errors::InvalidArgument("convolution too large for cuDNN: input [", c.g.n, ", ", h, ", ", w, ", ", c.g.c,
                                   "], ", c.o, " filters");
  }
  auto i32 = [](int64_t v) { return static_cast<int>(v); };
  RETURN_IF_ERROR(CudnnStatus(cudnnCreateTensorDescriptor(&d->input), "cudnnCreateTensorDescriptor"));
  RETURN_IF_ERROR(CudnnStatus(cudnnCreateTensorDescriptor(&d->output), "cudnnCreateTensorDescriptor"));
  RETURN_IF_ERROR(CudnnStatus(cudnnCreateFilterDescriptor(&d->filter), "cudnnCreateFilterDescriptor"));
  RETURN_IF_ERROR(CudnnStatus(cudnnCreateConvolutionDescriptor(&d->conv), "cudnnCreateConvolutionDescriptor"));
  RETURN_IF_ERROR(CudnnStatus(cudnnSetTensor4dDescriptor(d->input, CUDNN_TENSOR_NCHW, kCudnnType<T>, i32(c.g.n),
                                                         i32(c.g.c), i32(h), i32(w)),
                              "cudnnSetTensor4dDescriptor"));
  RETURN_IF_ERROR(CudnnStatus(cudnnSetTensor4dDescriptor(d->output, CUDNN_TENSOR_NCHW, kCudnnType<T>, i32(c.g.n),
                                                         i32(c.o), i32(c.g.oh), i32(c.g.ow)),
                              "cudnnSetTensor4dDescriptor"));
  RETURN_IF_ERROR(CudnnStatus(cudnnSetFilter4dDescriptor(d->filter, kCudnnType<T>, CUDNN_TENSOR_NCHW, i32(c.o),
                                                         i32(c.g.c), i32(c.g.kh), i32(c.g.kw)),
                              "cudnnSetFilter4dDescriptor"));
  RETURN_IF_ERROR(CudnnStatus(cudnnSetConvolution2dDescriptor(d->conv, i32(c.g.pad_top), i32(c.g.pad_left),
                                                              i32(c.g.sh), i32(c.g.sw), 1, 1,
                                                              CUDNN_CROSS_CORRELATION, kCudnnType<T>),
                              "cudnnSetConvolution2dDescriptor"));
  // FMA math keeps float32 in float32; tensor-op math lets cuDNN use TF32.
  RETURN_IF_ERROR(CudnnStatus(
      cudnnSetConvolutionMathType(d->conv, allow_tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
      "cudnnSetConvolutionMathType"));
  int n, ch, oh, ow;
  RETURN_IF_ERROR(CudnnStatus(cudnnGetConvolution2dForwardOutputDim(d->conv, d->input, d->filter, &n, &ch, &oh, &ow),
                              "cudnnGetConvolution2dForwardOutputDim"));
  if (oh != c.g.oh || ow != c.g.ow) {
    return errors::Internal("cuDNN's output ", oh, "x", ow, " differs from TensorFlow's ", c.g.oh, "x", c.g.ow);
  }
  return Status::OK();
}

enum class ConvPass { kForward, kBackwardData, kBackwardFilter };

// An algorithm of one pass (cuDNN's three enums as an int) and its workspace.
struct Algorithm {
  int algo;
  size_t workspace;
};

// The algorithms cuDNN's heuristics suggest for a pass, best first, that it can run.
StatusOr<std::vector<Algorithm>> Candidates(cudnnHandle_t h, ConvPass pass, const ConvDescriptors& d) {
  constexpr int kMax = 16;
  std::vector<Algorithm> out;
  int count = 0;
  auto keep = [&](const auto* results) {
    for (int i = 0; i < count; ++i) {
      if (results[i].status == CUDNN_STATUS_SUCCESS) out.push_back({static_cast<int>(results[i].algo), results[i].memory});
    }
  };
  if (pass == ConvPass::kForward) {
    cudnnConvolutionFwdAlgoPerf_t results[kMax];
    RETURN_IF_ERROR(CudnnStatus(cudnnGetConvolutionForwardAlgorithm_v7(h, d.input, d.filter, d.conv, d.output, kMax,
                                                                       &count, results),
                                "cudnnGetConvolutionForwardAlgorithm_v7"));
    keep(results);
  } else if (pass == ConvPass::kBackwardData) {
    cudnnConvolutionBwdDataAlgoPerf_t results[kMax];
    RETURN_IF_ERROR(CudnnStatus(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.filter, d.output, d.conv, d.input,
                                                                            kMax, &count, results),
                                "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
    keep(results);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t results[kMax];
    RETURN_IF_ERROR(CudnnStatus(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.input, d.output, d.conv, d.filter,
                                                                              kMax, &count, results),
                                "cudnnGetConvolutionBackwardFilterAlgorithm_v7"));
    keep(results);
  }
  if (out.empty()) return errors::Unimplemented("cuDNN has no algorithm for this convolution");
  return out;
}

// The fastest algorithm of a pass, timed by cuDNN on the step's own buffers (TensorFlow
// autotunes the same way), among the heuristics' candidates whose workspace can be had:
// the heuristics' first choice for the CNN's filter gradient took 4.4 ms on an H200, the
// fastest 0.06 ms.
StatusOr<Algorithm> Autotune(OpKernelContext* ctx, cudnnHandle_t h, ConvPass pass, const ConvDescriptors& d,
                             bool allow_tf32, const std::vector<Algorithm>& candidates, const void* x, const void* w,
                             void* y) {
  constexpr size_t kMaxWorkspace = size_t{1} << 30;
  size_t largest = 0;
  for (const Algorithm& a : candidates) {
    if (a.workspace <= kMaxWorkspace) largest = std::max(largest, a.workspace);
  }
  Tensor workspace;
  RETURN_IF_ERROR(ctx->allocate_temp(DataType::kUInt8, TensorShape({static_cast<int64_t>(largest)}), &workspace));
  constexpr int kMax = 16;
  int count = 0;
  std::vector<Algorithm> timed;
  auto keep = [&](const auto* results) {
    for (int i = 0; i < count; ++i) {  // fastest first
      const bool tensor_ops = results[i].mathType != CUDNN_DEFAULT_MATH && results[i].mathType != CUDNN_FMA_MATH;
      if (results[i].status == CUDNN_STATUS_SUCCESS && results[i].memory <= largest && (allow_tf32 || !tensor_ops)) {
        timed.push_back({static_cast<int>(results[i].algo), results[i].memory});
      }
    }
  };
  if (pass == ConvPass::kForward) {
    cudnnConvolutionFwdAlgoPerf_t results[kMax];
    RETURN_IF_ERROR(CudnnStatus(cudnnFindConvolutionForwardAlgorithmEx(h, d.input, x, d.filter, w, d.conv, d.output, y,
                                                                       kMax, &count, results, workspace.raw_data(),
                                                                       largest),
                                "cudnnFindConvolutionForwardAlgorithmEx"));
    keep(results);
  } else if (pass == ConvPass::kBackwardData) {
    cudnnConvolutionBwdDataAlgoPerf_t results[kMax];
    RETURN_IF_ERROR(CudnnStatus(cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.filter, w, d.output, x, d.conv,
                                                                            d.input, y, kMax, &count, results,
                                                                            workspace.raw_data(), largest),
                                "cudnnFindConvolutionBackwardDataAlgorithmEx"));
    keep(results);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t results[kMax];
    RETURN_IF_ERROR(CudnnStatus(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.input, x, d.output, w, d.conv,
                                                                              d.filter, y, kMax, &count, results,
                                                                              workspace.raw_data(), largest),
                                "cudnnFindConvolutionBackwardFilterAlgorithmEx"));
    keep(results);
  }
  if (timed.empty()) return errors::Unimplemented("cuDNN timed no algorithm for this convolution");
  return timed.front();
}

class ConvBase : public GpuOpKernel {
 public:
  ConvBase(OpKernelConstruction* c, ConvPass pass) : GpuOpKernel(c), attrs_(ReadConvAttrs(c)), pass_(pass) {}

 protected:
  // Runs this kernel's pass of `conv`. The first step of a shape describes it to cuDNN and
  // chooses the algorithm: the autotuned one, or where autotuning fails, the heuristics'
  // first whose workspace can be had. Both are kept per shape: describing a convolution
  // costs host time a step should not pay again.
  template <typename T>
  Status Run(OpKernelContext* ctx, const GpuDeviceContext& gpu, const CudnnConv& conv, const void* x, const void* w,
             void* y) {
    return gpu.WithCudnn([&](cudnnHandle_t h) -> Status {
      const Plan* plan = nullptr;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = plans_.find(conv.key());
        if (it != plans_.end()) plan = it->second.get();
      }
      if (plan != nullptr) {
        Tensor workspace;
        RETURN_IF_ERROR(ctx->allocate_temp(DataType::kUInt8,
                                           TensorShape({static_cast<int64_t>(plan->algorithm.workspace)}), &workspace));
        return Launch<T>(h, plan->d, plan->algorithm, x, w, y, workspace.raw_data());
      }
      auto fresh = std::make_unique<Plan>();
      RETURN_IF_ERROR(Describe<T>(conv, gpu.allow_tf32(), &fresh->d));
      ASSIGN_OR_RETURN(std::vector<Algorithm> candidates, Candidates(h, pass_, fresh->d));
      StatusOr<Algorithm> fastest = Autotune(ctx, h, pass_, fresh->d, gpu.allow_tf32(), candidates, x, w, y);
      if (fastest.ok()) candidates.insert(candidates.begin(), *fastest);
      Status last;
      for (const Algorithm& a : candidates) {
        Tensor workspace;
        last = ctx->allocate_temp(DataType::kUInt8, TensorShape({static_cast<int64_t>(a.workspace)}), &workspace);
        if (!last.ok()) continue;
        last = Launch<T>(h, fresh->d, a, x, w, y, workspace.raw_data());
        if (last.ok()) {
          fresh->algorithm = a;
          std::lock_guard<std::mutex> lock(mu_);
          plans_.emplace(conv.key(), std::move(fresh));
          return last;
        }
      }
      return last;
    });
  }

  const ConvAttrs attrs_;

 private:
  template <typename T>
  Status Launch(cudnnHandle_t h, const ConvDescriptors& d, const Algorithm& a, const void* x, const void* w, void* y,
                void* workspace) const {
    const T one = 1, zero = 0;
    switch (pass_) {
      case ConvPass::kForward:
        return CudnnStatus(cudnnConvolutionForward(h, &one, d.input, x, d.filter, w, d.conv,
                                                   static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), workspace,
                                                   a.workspace, &zero, d.output, y),
                           "cudnnConvolutionForward");
      case ConvPass::kBackwardData:  // x is the output gradient, y the input gradient
        return CudnnStatus(cudnnConvolutionBackwardData(h, &one, d.filter, w, d.output, x, d.conv,
                                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), workspace,
                                                        a.workspace, &zero, d.input, y),
                           "cudnnConvolutionBackwardData");
      case ConvPass::kBackwardFilter:  // w is the output gradient, y the filter gradient
        return CudnnStatus(cudnnConvolutionBackwardFilter(h, &one, d.input, x, d.output, w, d.conv,
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo),
                                                          workspace, a.workspace, &zero, d.filter, y),
                           "cudnnConvolutionBackwardFilter");
    }
    return errors::Internal("unknown convolution pass");
  }

  // A shape's descriptors and algorithm, made by its first step and read-only after.
  struct Plan {
    ConvDescriptors d;
    Algorithm algorithm{};
  };

  const ConvPass pass_;
  std::mutex mu_;
  std::map<std::array<int64_t, 11>, std::unique_ptr<Plan>> plans_;  // guarded by mu_
};

// filter [KH, KW, C, O] -> [O, C, KH, KW] in a new temporary, on the compute stream.
template <typename T>
StatusOr<Tensor> FilterForCudnn(OpKernelContext* ctx, const GpuDeviceContext& gpu, const Tensor& f) {
  Tensor out;
  RETURN_IF_ERROR(ctx->allocate_temp(f.dtype(), TensorShape({f.dim(3), f.dim(2), f.dim(0), f.dim(1)}), &out));
  const Permutation p{4, {f.dim(0), f.dim(1), f.dim(2), f.dim(3)}, {3, 2, 0, 1}};
  RETURN_IF_ERROR(CudaStatus(
      Transpose<T>(DevicePtr<T>(f), MutableDevicePtr<T>(&out), p, f.NumElements(), gpu.compute_stream()), "Transpose"));
  return out;
}

// An NHWC tensor as cuDNN's NCHW: a transposed temporary, or the tensor itself when it has
// one channel (the two layouts are then the same bytes).
template <typename T>
StatusOr<Tensor> ToNchw(OpKernelContext* ctx, const GpuDeviceContext& gpu, const Tensor& t) {
  const int64_t n = t.dim(0), h = t.dim(1), w = t.dim(2), c = t.dim(3);
  if (c == 1) return t;
  Tensor out;
  RETURN_IF_ERROR(ctx->allocate_temp(t.dtype(), TensorShape({n, c, h, w}), &out));
  RETURN_IF_ERROR(CudaStatus(NhwcToNchw<T>(DevicePtr<T>(t), MutableDevicePtr<T>(&out), n, h * w, c,
                                           gpu.compute_stream()),
                             "NhwcToNchw"));
  return out;
}

// Where cuDNN writes an NCHW result of `out`'s NHWC shape: a temporary, or `out` itself
// when it has one channel and nothing is applied on the way (FromNchw is then a no-op).
template <typename T>
StatusOr<Tensor> NchwResultFor(OpKernelContext* ctx, const Tensor& out, bool epilogue) {
  if (out.dim(3) == 1 && !epilogue) return out;
  Tensor nchw;
  RETURN_IF_ERROR(ctx->allocate_temp(out.dtype(), TensorShape({out.dim(0), out.dim(3), out.dim(1), out.dim(2)}), &nchw));
  return nchw;
}

// An NCHW result into `out` (NHWC), bias added and ReLU applied when given.
template <typename T>
Status FromNchw(const GpuDeviceContext& gpu, const Tensor& nchw, const Tensor* bias, bool relu, Tensor* out) {
  if (nchw.raw_data() == out->raw_data()) return Status::OK();
  return CudaStatus(NchwToNhwc<T>(DevicePtr<T>(nchw), bias != nullptr ? DevicePtr<T>(*bias) : nullptr, relu,
                                  MutableDevicePtr<T>(out), out->dim(0), out->dim(1) * out->dim(2), out->dim(3),
                                  gpu.compute_stream()),
                    "NchwToNhwc");
}

// The input as cuDNN sees it: NCHW, padded first where TensorFlow pads unevenly.
template <typename T>
StatusOr<Tensor> InputForCudnn(OpKernelContext* ctx, const GpuDeviceContext& gpu, const CudnnConv& conv,
                               const Tensor& in) {
  Tensor padded = in;
  if (conv.padded()) {
    RETURN_IF_ERROR(ctx->allocate_temp(in.dtype(), conv.padded_input_shape(), &padded));
    RETURN_IF_ERROR(CudaStatus(
        PadNhwc<T>(DevicePtr<T>(in), MutableDevicePtr<T>(&padded), conv.extra, gpu.compute_stream()), "Pad"));
  }
  return ToNchw<T>(ctx, gpu, padded);
}

template <typename T>
Status FillZeros(const GpuDeviceContext& gpu, Tensor* t) {
  return CudaStatus(Fill<T>(MutableDevicePtr<T>(t), T(0), t->NumElements(), gpu.compute_stream()), "Fill");
}

template <typename T>
class Conv2DOp : public ConvBase {
 public:
  explicit Conv2DOp(OpKernelConstruction* c) : ConvBase(c, ConvPass::kForward) {
    if (type_string() != "_FusedConv2D") return;
    fused_ = true;
    Status s = ReadFusedOps(c, &relu_);
    if (!s.ok()) c->SetStatus(s);
  }
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& in = ctx->input(0);
    const Tensor& f = ctx->input(1);
    StatusOr<Geometry> g = ConvGeometry(attrs_, in.shape(), f.shape());
    OP_REQUIRES_OK(ctx, g.status());
    const int64_t o = f.dim(3);
    OP_REQUIRES(ctx, !fused_ || (num_inputs() == 3 && ctx->input(2).shape() == TensorShape({o})),
                errors::InvalidArgument("_FusedConv2D with BiasAdd takes one arg, a bias of ", o, " values"));
    const Tensor* bias = fused_ ? &ctx->input(2) : nullptr;
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g->output_shape(o), &out));
    if (out->NumElements() == 0) return;
    if (g->c == 0 || g->kh == 0 || g->kw == 0) {
      // No products: the output is the bias (after ReLU), or zeros.
      OP_REQUIRES_OK(ctx, FillZeros<T>(gpu, out));
      if (fused_) {
        OP_REQUIRES_OK(ctx, CudaStatus(BiasAdd<T>(DevicePtr<T>(*out), DevicePtr<T>(*bias), relu_, MutableDevicePtr<T>(out),
                                                  out->NumElements(), o, 1, gpu.compute_stream()),
                                       type_string()));
      }
      return;
    }
    const CudnnConv conv = MakeCudnnConv(*g, o);
    StatusOr<Tensor> filter = FilterForCudnn<T>(ctx, gpu, f);
    OP_REQUIRES_OK(ctx, filter.status());
    StatusOr<Tensor> input = InputForCudnn<T>(ctx, gpu, conv, in);
    OP_REQUIRES_OK(ctx, input.status());
    StatusOr<Tensor> result = NchwResultFor<T>(ctx, *out, fused_);
    OP_REQUIRES_OK(ctx, result.status());
    OP_REQUIRES_OK(ctx, Run<T>(ctx, gpu, conv, input->raw_data(), filter->raw_data(), result->raw_data()));
    OP_REQUIRES_OK(ctx, FromNchw<T>(gpu, *result, bias, relu_, out));
  }

 private:
  bool fused_ = false;  // _FusedConv2D: BiasAdd after the convolution, then Relu when relu_
  bool relu_ = false;
};

template <typename T>
class Conv2DBackpropInputOp : public ConvBase {
 public:
  explicit Conv2DBackpropInputOp(OpKernelConstruction* c) : ConvBase(c, ConvPass::kBackwardData) {}
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    StatusOr<TensorShape> in_shape = ShapeArgument(ctx->input(0), "input_sizes");
    OP_REQUIRES_OK(ctx, in_shape.status());
    const Tensor& f = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    StatusOr<Geometry> g = ConvBackpropGeometry(attrs_, *in_shape, f.shape(), dy);
    OP_REQUIRES_OK(ctx, g.status());
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *in_shape, &dx));
    if (dx->NumElements() == 0) return;
    if (dy.NumElements() == 0 || g->kh == 0 || g->kw == 0) {
      OP_REQUIRES_OK(ctx, FillZeros<T>(gpu, dx));
      return;
    }
    const CudnnConv conv = MakeCudnnConv(*g, f.dim(3));
    StatusOr<Tensor> filter = FilterForCudnn<T>(ctx, gpu, f);
    OP_REQUIRES_OK(ctx, filter.status());
    StatusOr<Tensor> dy_nchw = ToNchw<T>(ctx, gpu, dy);
    OP_REQUIRES_OK(ctx, dy_nchw.status());
    Tensor padded_dx = *dx;  // NHWC
    if (conv.padded()) OP_REQUIRES_OK(ctx, ctx->allocate_temp(dx->dtype(), conv.padded_input_shape(), &padded_dx));
    StatusOr<Tensor> result = NchwResultFor<T>(ctx, padded_dx, false);
    OP_REQUIRES_OK(ctx, result.status());
    OP_REQUIRES_OK(ctx, Run<T>(ctx, gpu, conv, dy_nchw->raw_data(), filter->raw_data(), result->raw_data()));
    OP_REQUIRES_OK(ctx, FromNchw<T>(gpu, *result, nullptr, false, &padded_dx));
    if (conv.padded()) {
      OP_REQUIRES_OK(ctx, CudaStatus(CropNhwc<T>(DevicePtr<T>(padded_dx), MutableDevicePtr<T>(dx), conv.extra,
                                                 gpu.compute_stream()),
                                     "Crop"));
    }
  }
};

template <typename T>
class Conv2DBackpropFilterOp : public ConvBase {
 public:
  explicit Conv2DBackpropFilterOp(OpKernelConstruction* c) : ConvBase(c, ConvPass::kBackwardFilter) {}
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& in = ctx->input(0);
    StatusOr<TensorShape> f_shape = ShapeArgument(ctx->input(1), "filter_sizes");
    OP_REQUIRES_OK(ctx, f_shape.status());
    const Tensor& dy = ctx->input(2);
    StatusOr<Geometry> g = ConvBackpropGeometry(attrs_, in.shape(), *f_shape, dy);
    OP_REQUIRES_OK(ctx, g.status());
    const int64_t o = f_shape->dim(3);
    Tensor* df;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *f_shape, &df));
    if (df->NumElements() == 0) return;
    if (dy.NumElements() == 0) {
      OP_REQUIRES_OK(ctx, FillZeros<T>(gpu, df));
      return;
    }
    const CudnnConv conv = MakeCudnnConv(*g, o);
    StatusOr<Tensor> input = InputForCudnn<T>(ctx, gpu, conv, in);
    OP_REQUIRES_OK(ctx, input.status());
    StatusOr<Tensor> dy_nchw = ToNchw<T>(ctx, gpu, dy);
    OP_REQUIRES_OK(ctx, dy_nchw.status());
    Tensor df_oihw;  // cuDNN's layout, [O, C, KH, KW]
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(df->dtype(), TensorShape({o, g->c, g->kh, g->kw}), &df_oihw));
    OP_REQUIRES_OK(ctx, Run<T>(ctx, gpu, conv, input->raw_data(), dy_nchw->raw_data(), df_oihw.raw_data()));
    const Permutation to_hwio{4, {o, g->c, g->kh, g->kw}, {2, 3, 1, 0}};
    OP_REQUIRES_OK(ctx, CudaStatus(Transpose<T>(DevicePtr<T>(df_oihw), MutableDevicePtr<T>(df), to_hwio,
                                                df->NumElements(), gpu.compute_stream()),
                                   "Transpose"));
  }
};

class PoolBase : public GpuOpKernel {
 public:
  explicit PoolBase(OpKernelConstruction* c) : GpuOpKernel(c), attrs_(ReadPoolAttrs(c)) {}

 protected:
  static PoolWindows Windows(const Geometry& g) {
    return {g.n, g.h, g.w, g.c, g.kh, g.kw, g.sh, g.sw, g.oh, g.ow, g.pad_top, g.pad_left};
  }
  const PoolAttrs attrs_;
};

template <typename T, bool kMax>
class PoolOp : public PoolBase {
 public:
  using PoolBase::PoolBase;
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& in = ctx->input(0);
    StatusOr<Geometry> g = PoolGeometry(attrs_, in.shape());
    OP_REQUIRES_OK(ctx, g.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g->output_shape(g->c), &out));
    OP_REQUIRES_OK(ctx, CudaStatus(Pool<T>(kMax, DevicePtr<T>(in), MutableDevicePtr<T>(out), Windows(*g),
                                           gpu.compute_stream()),
                                   type_string()));
  }
};

template <typename T>
class MaxPoolGradOp : public PoolBase {
 public:
  using PoolBase::PoolBase;
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    const Tensor& in = ctx->input(0);
    const Tensor& dy = ctx->input(2);
    StatusOr<Geometry> g = PoolGradGeometry(attrs_, in.shape(), dy);
    OP_REQUIRES_OK(ctx, g.status());
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &dx));
    OP_REQUIRES_OK(ctx, CudaStatus(MaxPoolGrad<T>(DevicePtr<T>(in), DevicePtr<T>(dy), MutableDevicePtr<T>(dx),
                                                  Windows(*g), gpu.compute_stream()),
                                   "MaxPoolGrad"));
  }
};

template <typename T>
class AvgPoolGradOp : public PoolBase {
 public:
  using PoolBase::PoolBase;
  void ComputeOnGpu(OpKernelContext* ctx, const GpuDeviceContext& gpu) override {
    StatusOr<TensorShape> in_shape = ShapeArgument(ctx->input(0), "orig_input_shape");
    OP_REQUIRES_OK(ctx, in_shape.status());
    const Tensor& dy = ctx->input(1);
    StatusOr<Geometry> g = PoolGradGeometry(attrs_, *in_shape, dy);
    OP_REQUIRES_OK(ctx, g.status());
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *in_shape, &dx));
    OP_REQUIRES_OK(ctx, CudaStatus(AvgPoolGrad<T>(DevicePtr<T>(dy), MutableDevicePtr<T>(dx), Windows(*g),
                                                  gpu.compute_stream()),
                                   "AvgPoolGrad"));
  }
};

}  // namespace

void RegisterConvKernels(KernelRegistry& r) {
  auto types = [&r](auto zero) {
    using T = decltype(zero);
    const std::vector<DataType> t = {DataTypeToEnum<T>::value};
    r.Register<Conv2DOp<T>>(KernelDefBuilder("Conv2D").Device(kDeviceGpu).TypeConstraint("T", t));
    if (std::is_same_v<T, float>) {
      r.Register<Conv2DOp<T>>(KernelDefBuilder("_FusedConv2D").Device(kDeviceGpu).TypeConstraint("T", t));
    }
    r.Register<Conv2DBackpropInputOp<T>>(
        KernelDefBuilder("Conv2DBackpropInput").Device(kDeviceGpu).TypeConstraint("T", t).HostMemory("input_sizes"));
    r.Register<Conv2DBackpropFilterOp<T>>(
        KernelDefBuilder("Conv2DBackpropFilter").Device(kDeviceGpu).TypeConstraint("T", t).HostMemory("filter_sizes"));
    r.Register<PoolOp<T, true>>(KernelDefBuilder("MaxPool").Device(kDeviceGpu).TypeConstraint("T", t));
    r.Register<PoolOp<T, false>>(KernelDefBuilder("AvgPool").Device(kDeviceGpu).TypeConstraint("T", t));
    r.Register<MaxPoolGradOp<T>>(KernelDefBuilder("MaxPoolGrad").Device(kDeviceGpu).TypeConstraint("T", t));
    r.Register<AvgPoolGradOp<T>>(
        KernelDefBuilder("AvgPoolGrad").Device(kDeviceGpu).TypeConstraint("T", t).HostMemory("orig_input_shape"));
  };
  types(float{});
  types(double{});
}

}  // namespace tessera::gpu
