// Softmax and LogSoftmax over the last axis, sparse softmax cross-entropy, BiasAdd and its
// gradient.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "devices/cpu/cpu_kernels.h"
#include "devices/cpu/sum_accumulator.h"
#include "kernels/util/sparse_xent_inputs.h"

namespace tessera::cpu {
namespace {

// Softmax, or LogSoftmax when kLog, over the last axis.
template <typename T, bool kLog>
class SoftmaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, in.rank() >= 1,
                errors::InvalidArgument("logits must have at least one dimension"));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const int64_t depth = in.dim(in.rank() - 1);
    if (in.NumElements() == 0) return;
    const int64_t rows = in.NumElements() / depth;
    const T* ip = in.data<T>();
    T* op = out->data<T>();
    using Row = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
    using OutRow = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
    ctx->ParallelFor(rows, depth * 20, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        Row x(ip + r * depth, depth);
        OutRow y(op + r * depth, depth);
        y = x - x.maxCoeff();  // shifted by the max so exp never overflows
        if constexpr (kLog) {
          y -= std::log(y.exp().sum());
        } else {
          y = y.exp();
          y /= y.sum();
        }
      }
    });
  }
};

template <typename T>
class BiasAddOp : public OpKernel {
 public:
  explicit BiasAddOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string format;
    Status s = c->GetAttr("data_format", &format);
    if (!s.ok()) c->SetStatus(s);
    nchw_ = format == "NCHW";
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    OP_REQUIRES(ctx, value.rank() >= 2,
                errors::InvalidArgument("Input tensor must be at least 2D: ",
                                        value.shape().DebugString()));
    OP_REQUIRES(ctx, bias.rank() == 1,
                errors::InvalidArgument("Biases must be 1D: ", bias.shape().DebugString()));
    const int channel_axis = nchw_ ? 1 : value.rank() - 1;
    const int64_t channels = value.dim(channel_axis);
    OP_REQUIRES(ctx, bias.dim(0) == channels,
                errors::InvalidArgument("Must provide as many biases as the channel dimension of "
                                        "the input tensor: ", bias.shape().DebugString(), " vs. ",
                                        value.shape().DebugString()));
    const T* vp = value.data<T>();
    const T* bp = bias.data<T>();
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, value.shape(), &out));
    if (out->NumElements() == 0) return;
    T* op = out->data<T>();
    // Element i has channel (i / inner) % channels, where inner is the size below the axis.
    int64_t inner = 1;
    for (int d = channel_axis + 1; d < out->rank(); ++d) inner *= out->dim(d);
    if (inner == 1) {
      // Channels last: each pixel's channels are one contiguous run, bias added as a vector.
      const int64_t pixels = out->NumElements() / channels;
      ctx->ParallelFor(pixels, channels, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          for (int64_t c = 0; c < channels; ++c) op[p * channels + c] = vp[p * channels + c] + bp[c];
        }
      });
      return;
    }
    const int64_t rows = out->NumElements() / inner;
    ctx->ParallelFor(rows, inner, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T bv = bp[r % channels];
        for (int64_t i = 0; i < inner; ++i) op[r * inner + i] = vp[r * inner + i] + bv;
      }
    });
  }

 private:
  bool nchw_ = false;
};

// Per row: loss = logsumexp(logits) - logits[label]; backprop = softmax(logits) - onehot.
template <typename T, typename L>
class SparseXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckSparseXentInputs(logits, labels));
    const int64_t rows = logits.dim(0), depth = logits.dim(1);
    const L* lp = labels.data<L>();
    for (int64_t r = 0; r < rows; ++r) {
      OP_REQUIRES(ctx, lp[r] >= 0 && lp[r] < depth,
                  errors::InvalidArgument("Received a label value of ", lp[r], " which is outside the valid range of [0, ",
                                          depth, ").  Label values: ", labels.DebugString(8)));
    }
    Tensor *loss, *backprop;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({rows}), &loss));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, logits.shape(), &backprop));
    if (rows == 0 || depth == 0) return;
    const T* ip = logits.data<T>();
    T* lossp = loss->data<T>();
    T* bp = backprop->data<T>();
    using Row = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
    using OutRow = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
    ctx->ParallelFor(rows, depth * 20, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        Row x(ip + r * depth, depth);
        OutRow g(bp + r * depth, depth);
        const T max = x.maxCoeff();
        g = (x - max).exp();
        const T sum = g.sum();
        lossp[r] = std::log(sum) - (x[lp[r]] - max);
        g /= sum;
        g[lp[r]] -= T(1);
      }
    });
  }
};

// The sum of the gradient over every dimension but the channels'.
template <typename T>
class BiasAddGradOp : public OpKernel {
 public:
  explicit BiasAddGradOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string format;
    Status s = c->GetAttr("data_format", &format);
    if (!s.ok()) c->SetStatus(s);
    nchw_ = format == "NCHW";
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    OP_REQUIRES(ctx, g.rank() >= 2,
                errors::InvalidArgument("Input tensor must be at least 2D: ", g.shape().DebugString()));
    const int axis = nchw_ ? 1 : g.rank() - 1;
    const int64_t channels = g.dim(axis);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({channels}), &out));
    T* op = out->data<T>();
    int64_t inner = 1;
    for (int d = axis + 1; d < g.rank(); ++d) inner *= g.dim(d);
    const T* gp = g.data<T>();
    const int64_t rows = channels == 0 || inner == 0 ? 0 : g.NumElements() / inner;
    std::vector<SumAccumulator<T>> sums(static_cast<size_t>(channels));
    if (inner == 1) {
      // Channels last: add each pixel's run of channels onto the sums, a vector at a time.
      for (int64_t p = 0; p < rows / channels; ++p) {
        for (int64_t c = 0; c < channels; ++c) sums[c].Add(gp[p * channels + c]);
      }
    } else {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < inner; ++i) sums[r % channels].Add(gp[r * inner + i]);
      }
    }
    for (int64_t c = 0; c < channels; ++c) op[c] = sums[c].Get();
  }

 private:
  bool nchw_ = false;
};

}  // namespace

// FusedBatchNorm(V2, V3) with given statistics: y = (x - mean) * scale / sqrt(variance + eps)
// + offset over NHWC's last dimension; the statistics pass through as TensorFlow's kernel
// hands them on. The training form (statistics of the batch) is not Tessera's.
class FusedBatchNormOp : public OpKernel {
 public:
  explicit FusedBatchNormOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string format;
    bool training = true;
    Status s = c->GetAttr("epsilon", &epsilon_);
    if (s.ok()) s = c->GetAttr("data_format", &format);
    if (s.ok()) s = c->GetAttr("is_training", &training);
    if (s.ok() && format != "NHWC") s = errors::Unimplemented(type_string(), " in ", format, "; Tessera runs NHWC");
    if (s.ok() && training) {
      s = errors::Unimplemented(type_string(), " '", name(), "' with is_training: Tessera runs batch normalisation ",
                                "with given statistics (is_training = false), as inference graphs hold it");
    }
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    OP_REQUIRES(ctx, x.rank() == 4, errors::InvalidArgument(type_string(), " takes a 4-D input, got ",
                                                            x.shape().DebugString()));
    const int64_t channels = x.dim(3);
    for (int i = 1; i <= 4; ++i) {
      OP_REQUIRES(ctx, ctx->input(i).shape() == TensorShape({channels}),
                  errors::InvalidArgument(type_string(), "'s ", kInputs[i - 1], " must be [", channels, "], got ",
                                          ctx->input(i).shape().DebugString()));
    }
    std::vector<float> scale(channels), shift(channels);
    const float* gamma = ctx->input(1).data<float>();
    const float* beta = ctx->input(2).data<float>();
    const float* mean = ctx->input(3).data<float>();
    const float* variance = ctx->input(4).data<float>();
    for (int64_t c = 0; c < channels; ++c) {
      scale[c] = gamma[c] / std::sqrt(variance[c] + epsilon_);
      shift[c] = beta[c] - mean[c] * scale[c];
    }
    Tensor* y;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    const float* in = x.data<float>();
    float* out = y->data<float>();
    const int64_t rows = channels == 0 ? 0 : x.NumElements() / channels;
    ctx->ParallelFor(rows, channels * 2, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t c = 0; c < channels; ++c) out[r * channels + c] = in[r * channels + c] * scale[c] + shift[c];
      }
    });
    ctx->set_output(1, ctx->input(3));
    ctx->set_output(2, ctx->input(4));
    ctx->set_output(3, ctx->input(3));
    ctx->set_output(4, ctx->input(4));
    if (num_outputs() == 6) ctx->set_output(5, Tensor(DataType::kFloat, TensorShape({0})));
  }

 private:
  static constexpr const char* kInputs[] = {"scale", "offset", "mean", "variance"};
  float epsilon_ = 0;
};

void RegisterNnKernels(KernelRegistry& r) {
  for (const char* op : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}) {
    r.Register<FusedBatchNormOp>(KernelDefBuilder(op).Device(kDeviceCpu).TypeConstraint<float>("T"));
  }
  ForEachType<float, double>([&](auto zero) {
    using T = decltype(zero);
    r.Register<SoftmaxOp<T, false>>(KernelDefBuilder("Softmax").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<SoftmaxOp<T, true>>(KernelDefBuilder("LogSoftmax").Device(kDeviceCpu).TypeConstraint<T>("T"));
    ForEachType<int32_t, int64_t>([&](auto label_zero) {
      using L = decltype(label_zero);
      r.Register<SparseXentOp<T, L>>(KernelDefBuilder("SparseSoftmaxCrossEntropyWithLogits")
                                         .Device(kDeviceCpu)
                                         .TypeConstraint("T", {DataTypeToEnum<T>::value})
                                         .TypeConstraint("Tlabels", {DataTypeToEnum<L>::value}));
    });
  });
  ForEachType<float, double, int32_t, int64_t>([&](auto zero) {
    using T = decltype(zero);
    r.Register<BiasAddOp<T>>(KernelDefBuilder("BiasAdd").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<BiasAddGradOp<T>>(KernelDefBuilder("BiasAddGrad").Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
}

}  // namespace tessera::cpu
