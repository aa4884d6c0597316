// Cast between every pair of numeric and bool types, float16 and bfloat16 included.
#include <cmath>
#include <limits>

#include "devices/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

// Widens storage types to float so one conversion rule serves every pair.
template <typename T>
auto Widen(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return HalfToFloat(v);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16ToFloat(v);
  } else {
    return v;
  }
}

template <typename Dst, typename Src>
Dst Convert(Src s) {
  auto v = Widen(s);
  if constexpr (std::is_same_v<Dst, Half>) {
    return FloatToHalf(static_cast<float>(v));
  } else if constexpr (std::is_same_v<Dst, BFloat16>) {
    return FloatToBFloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<Dst, bool>) {
    return v != decltype(v)(0);
  } else if constexpr (std::is_integral_v<Dst> && std::is_floating_point_v<decltype(v)>) {
    // Float to int truncates; NaN and out-of-range values saturate rather than being
    // undefined behaviour.
    if (std::isnan(v)) return Dst(0);
    if (v <= static_cast<decltype(v)>(std::numeric_limits<Dst>::lowest())) {
      return std::numeric_limits<Dst>::lowest();
    }
    if (v >= static_cast<decltype(v)>(std::numeric_limits<Dst>::max())) {
      return std::numeric_limits<Dst>::max();
    }
    return static_cast<Dst>(v);
  } else {
    return static_cast<Dst>(v);
  }
}

class CastOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    if (in.dtype() == output_type(0)) {
      ctx->set_output(0, in);
      return;
    }
    OP_REQUIRES(ctx, DataTypeSize(in.dtype()) > 0 && DataTypeSize(output_type(0)) > 0,
                errors::Unimplemented("Cast ", DataTypeName(in.dtype()), " to ",
                                      DataTypeName(output_type(0)), " is not supported"));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    VisitDataType(in.dtype(), [&](auto src_zero) {
      using Src = decltype(src_zero);
      VisitDataType(out->dtype(), [&](auto dst_zero) {
        using Dst = decltype(dst_zero);
        if constexpr (!std::is_same_v<Src, std::string> && !std::is_same_v<Dst, std::string>) {
          const Src* s = in.data<Src>();
          Dst* d = out->data<Dst>();
          ctx->ParallelFor(in.NumElements(), 2, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) d[i] = Convert<Dst>(s[i]);
          });
        }
      });
    });
  }
};

}  // namespace

void RegisterCastKernels(KernelRegistry& r) {
  r.Register<CastOp>(KernelDefBuilder("Cast").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
