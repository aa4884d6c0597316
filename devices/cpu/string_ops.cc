// String ops: StringJoin, and full matches of RE2 patterns (TensorFlow's regex engine, whose
// time is linear in the input whatever the pattern).
#include <re2/re2.h>

#include <algorithm>

#include "devices/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

// Joins its inputs element by element; scalars stand for every element.
class StringJoinOp : public OpKernel {
 public:
  explicit StringJoinOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("separator", &separator_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    TensorShape shape;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& t = ctx->input(i);
      OP_REQUIRES(ctx, t.dtype() == DataType::kString,
                  errors::InvalidArgument("StringJoin's input ", i, " is ", DataTypeName(t.dtype())));
      if (t.rank() == 0) continue;
      OP_REQUIRES(ctx, shape.rank() == 0 || shape == t.shape(),
                  errors::InvalidArgument("StringJoin's inputs must be scalars or of one shape: ",
                                          shape.DebugString(), " and ", t.shape().DebugString()));
      shape = t.shape();
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    std::string* o = out->data<std::string>();
    for (int64_t e = 0; e < out->NumElements(); ++e) {
      for (int i = 0; i < ctx->num_inputs(); ++i) {
        const Tensor& t = ctx->input(i);
        if (i > 0) o[e] += separator_;
        o[e] += t.data<std::string>()[t.rank() == 0 ? 0 : e];
      }
    }
  }

 private:
  std::string separator_;
};

class StringLengthOp : public OpKernel {
 public:
  explicit StringLengthOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string unit;
    Status s = c->GetAttr("unit", &unit);
    if (s.ok() && unit != "BYTE" && unit != "UTF8_CHAR") s = errors::InvalidArgument("unknown unit '", unit, "'");
    if (!s.ok()) c->SetStatus(s);
    utf8_ = unit == "UTF8_CHAR";
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    for (int64_t i = 0; i < in.NumElements(); ++i) {
      const std::string& s = in.data<std::string>()[i];
      int64_t n = static_cast<int64_t>(s.size());
      if (utf8_) n = std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<uint8_t>(c) & 0xc0) != 0x80; });
      out->data<int32_t>()[i] = static_cast<int32_t>(n);
    }
  }

 private:
  bool utf8_ = false;
};

Status CompilePattern(const std::string& pattern, std::unique_ptr<RE2>* out) {
  RE2::Options options;
  options.set_log_errors(false);
  *out = std::make_unique<RE2>(pattern, options);
  if (!(*out)->ok()) return errors::InvalidArgument("Invalid pattern: ", pattern, ", error: ", (*out)->error());
  return Status::OK();
}

void FullMatch(OpKernelContext* ctx, const RE2& re) {
  const Tensor& in = ctx->input(0);
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
  for (int64_t i = 0; i < in.NumElements(); ++i) {
    out->data<bool>()[i] = RE2::FullMatch(in.data<std::string>()[i], re);
  }
}

class StaticRegexFullMatchOp : public OpKernel {
 public:
  explicit StaticRegexFullMatchOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string pattern;
    Status s = c->GetAttr("pattern", &pattern);
    if (s.ok()) s = CompilePattern(pattern, &re_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override { FullMatch(ctx, *re_); }

 private:
  std::unique_ptr<RE2> re_;
};

class RegexFullMatchOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& pattern = ctx->input(1);
    OP_REQUIRES(ctx, pattern.rank() == 0,
                errors::InvalidArgument("Pattern must be scalar, but received ", pattern.shape().DebugString()));
    std::unique_ptr<RE2> re;
    OP_REQUIRES_OK(ctx, CompilePattern(pattern.data<std::string>()[0], &re));
    FullMatch(ctx, *re);
  }
};

}  // namespace

void RegisterStringKernels(KernelRegistry& r) {
  r.Register<StringJoinOp>(KernelDefBuilder("StringJoin").Device(kDeviceCpu));
  r.Register<StringLengthOp>(KernelDefBuilder("StringLength").Device(kDeviceCpu));
  r.Register<StaticRegexFullMatchOp>(KernelDefBuilder("StaticRegexFullMatch").Device(kDeviceCpu));
  r.Register<RegexFullMatchOp>(KernelDefBuilder("RegexFullMatch").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
