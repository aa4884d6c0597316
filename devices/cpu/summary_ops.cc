// Summary kernels: scalars, histograms and images as TensorFlow's Summary protos
// (graph/serialize/summary.h), and merges of them.
#include <algorithm>
#include <cmath>
#include <vector>

#include "devices/cpu/cpu_kernels.h"
#include "graph/serialize/png.h"
#include "graph/serialize/summary.h"

namespace tessera::cpu {
namespace {

// Each element of a real-number tensor, widened.
StatusOr<std::vector<double>> AsDoubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.NumElements()));
  auto widen = [&](auto* p) { std::transform(p, p + out.size(), out.begin(), [](auto v) { return double(v); }); };
  switch (t.dtype()) {
    case DataType::kFloat: widen(t.data<float>()); break;
    case DataType::kDouble: widen(t.data<double>()); break;
    case DataType::kInt32: widen(t.data<int32_t>()); break;
    case DataType::kInt64: widen(t.data<int64_t>()); break;
    case DataType::kUInt8: widen(t.data<uint8_t>()); break;
    case DataType::kHalf:
      std::transform(t.data<Half>(), t.data<Half>() + out.size(), out.begin(), HalfToFloat);
      break;
    case DataType::kBFloat16:
      std::transform(t.data<BFloat16>(), t.data<BFloat16>() + out.size(), out.begin(), BFloat16ToFloat);
      break;
    default:
      return errors::InvalidArgument("A summary of ", DataTypeName(t.dtype()), " values");
  }
  return out;
}

// Every summary op's output: one serialized Summary, a scalar string.
void OutputSummary(OpKernelContext* ctx, std::string summary) {
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(), &out));
  out->data<std::string>()[0] = std::move(summary);
}

Status ScalarTag(OpKernelContext* ctx, std::string* tag) {
  const Tensor& t = ctx->input(0);
  if (t.rank() != 0) return errors::InvalidArgument("The tag must be a scalar, not ", t.shape().DebugString());
  *tag = t.data<std::string>()[0];
  return Status::OK();
}

class ScalarSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& tags = ctx->input(0);
    const Tensor& values = ctx->input(1);
    OP_REQUIRES(ctx, tags.shape() == values.shape(),
                errors::InvalidArgument("tags and values are not the same shape: ", tags.shape().DebugString(),
                                        " != ", values.shape().DebugString()));
    StatusOr<std::vector<double>> v = AsDoubles(values);
    OP_REQUIRES_OK(ctx, v.status());
    SummaryBuilder summary;
    for (size_t i = 0; i < v->size(); ++i) summary.AddScalar(tags.data<std::string>()[i], static_cast<float>((*v)[i]));
    OutputSummary(ctx, summary.Serialize());
  }
};

class HistogramSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::string tag;
    OP_REQUIRES_OK(ctx, ScalarTag(ctx, &tag));
    StatusOr<std::vector<double>> v = AsDoubles(ctx->input(1));
    OP_REQUIRES_OK(ctx, v.status());
    SummaryHistogram histogram;
    for (double x : *v) {
      OP_REQUIRES(ctx, std::isfinite(x), errors::InvalidArgument("Nan in summary histogram for: ", name()));
      histogram.Add(x);
    }
    SummaryBuilder summary;
    summary.AddHistogram(tag, histogram);
    OutputSummary(ctx, summary.Serialize());
  }
};

class ImageSummaryOp : public OpKernel {
 public:
  explicit ImageSummaryOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("max_images", &max_images_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    std::string tag;
    OP_REQUIRES_OK(ctx, ScalarTag(ctx, &tag));
    const Tensor& images = ctx->input(1);
    OP_REQUIRES(ctx,
                images.rank() == 4 && (images.dim(3) == 1 || images.dim(3) == 3 || images.dim(3) == 4),
                errors::InvalidArgument("Tensor must be 4-D with last dim 1, 3, or 4, not ",
                                        images.shape().DebugString()));
    const int64_t batch = std::min(images.dim(0), max_images_);
    const int64_t height = images.dim(1), width = images.dim(2), channels = images.dim(3);
    OP_REQUIRES(ctx, height < (int64_t{1} << 31) && width < (int64_t{1} << 31),
                errors::InvalidArgument("An image of ", height, "x", width, " is too large for a summary"));
    const int64_t pixels = height * width;
    std::vector<uint8_t> image(static_cast<size_t>(pixels * channels));
    std::vector<double> values;
    if (images.dtype() != DataType::kUInt8) {
      StatusOr<std::vector<double>> v = AsDoubles(images);
      OP_REQUIRES_OK(ctx, v.status());
      values = std::move(*v);
    }
    SummaryBuilder summary;
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t start = i * pixels * channels;
      if (images.dtype() == DataType::kUInt8) {
        std::copy_n(images.data<uint8_t>() + start, image.size(), image.begin());
      } else {
        ToUInt8(values.data() + start, pixels, channels, image.data());
      }
      StatusOr<std::string> png = EncodePng(image.data(), height, width, static_cast<int>(channels));
      OP_REQUIRES_OK(ctx, png.status());
      const std::string image_tag = max_images_ > 1 ? StrCat(tag, "/image/", i) : StrCat(tag, "/image");
      summary.AddImage(image_tag, static_cast<int>(height), static_cast<int>(width), static_cast<int>(channels),
                       std::move(*png));
    }
    OutputSummary(ctx, summary.Serialize());
  }

 private:
  // TensorFlow's scaling: the finite pixels' range, mapped by 255/max when none is negative,
  // else by 127/max|v| around 128; a pixel with a non-finite channel becomes red.
  static void ToUInt8(const double* v, int64_t pixels, int64_t channels, uint8_t* out) {
    static constexpr uint8_t kBadColor[] = {255, 0, 0, 255};
    auto finite = [&](int64_t p) {
      return std::all_of(v + p * channels, v + (p + 1) * channels, [](double x) { return std::isfinite(x); });
    };
    float lo = INFINITY, hi = -INFINITY;
    for (int64_t p = 0; p < pixels; ++p) {
      if (!finite(p)) continue;
      for (int64_t c = 0; c < channels; ++c) {
        lo = std::min(lo, static_cast<float>(v[p * channels + c]));
        hi = std::max(hi, static_cast<float>(v[p * channels + c]));
      }
    }
    constexpr float kZero = 1e-6f;
    float scale, offset;
    if (lo < 0) {
      const float max_abs = std::max(std::abs(lo), std::abs(hi));
      scale = max_abs < kZero ? 0.0f : 127.0f / max_abs;
      offset = 128.0f;
    } else {
      scale = hi < kZero ? 0.0f : 255.0f / hi;
      offset = 0.0f;
    }
    for (int64_t p = 0; p < pixels; ++p) {
      const bool ok = finite(p);
      for (int64_t c = 0; c < channels; ++c) {
        out[p * channels + c] =
            ok ? static_cast<uint8_t>(static_cast<float>(v[p * channels + c]) * scale + offset) : kBadColor[c];
      }
    }
  }

  int64_t max_images_ = 3;
};

class MergeSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::vector<std::string> summaries;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& t = ctx->input(i);
      summaries.insert(summaries.end(), t.data<std::string>(), t.data<std::string>() + t.NumElements());
    }
    StatusOr<std::string> merged = MergeSummaries(summaries);
    OP_REQUIRES_OK(ctx, merged.status());
    OutputSummary(ctx, std::move(*merged));
  }
};

}  // namespace

void RegisterSummaryKernels(KernelRegistry& r) {
  r.Register<ScalarSummaryOp>(KernelDefBuilder("ScalarSummary").Device(kDeviceCpu));
  r.Register<HistogramSummaryOp>(KernelDefBuilder("HistogramSummary").Device(kDeviceCpu));
  r.Register<ImageSummaryOp>(KernelDefBuilder("ImageSummary").Device(kDeviceCpu));
  r.Register<MergeSummaryOp>(KernelDefBuilder("MergeSummary").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
