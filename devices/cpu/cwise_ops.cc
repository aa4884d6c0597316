// Element-wise kernels: binary ops with numpy broadcasting, and unary math.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "devices/cpu/cpu_kernels.h"
#include "graph/shape_inference.h"
#include "kernels/util/broadcast_plan.h"

namespace tessera::cpu {
namespace {

// The innermost loop, specialised on whether each operand moves, so that it vectorises.
template <typename T, typename Out, typename F, bool kA, bool kB, typename B>
void InnerLoop(const T* a, const B* b, Out* out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[kA ? i : 0], b[kB ? i : 0]);
}

// Rows [begin_row, end_row) of the output, and of each row the elements [c0, c1).
template <typename T, typename Out, typename F, typename B = T>
void RunPlan(const BroadcastPlan& p, const T* a, const B* b, Out* out, int64_t begin_row, int64_t end_row, int64_t c0,
             int64_t c1, F f) {
  const int inner = p.rank - 1;
  const int64_t n = p.dims[inner];
  const bool ka = p.a_stride[inner] != 0, kb = p.b_stride[inner] != 0;
  // Odometer over the outer dims, started at begin_row.
  int64_t idx[BroadcastPlan::kMaxRank] = {};
  int64_t rem = begin_row, oa = 0, ob = 0;
  for (int d = inner - 1; d >= 0; --d) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    oa += idx[d] * p.a_stride[d];
    ob += idx[d] * p.b_stride[d];
  }
  const int64_t len = c1 - c0;
  for (int64_t row = begin_row; row < end_row; ++row) {
    Out* o = out + row * n + c0;
    const T* pa = a + oa + (ka ? c0 : 0);
    const B* pb = b + ob + (kb ? c0 : 0);
    if (ka && kb) {
      InnerLoop<T, Out, F, true, true>(pa, pb, o, len, f);
    } else if (ka) {
      InnerLoop<T, Out, F, true, false>(pa, pb, o, len, f);
    } else if (kb) {
      InnerLoop<T, Out, F, false, true>(pa, pb, o, len, f);
    } else {
      InnerLoop<T, Out, F, false, false>(pa, pb, o, len, f);
    }
    for (int d = inner - 1; d >= 0; --d) {
      oa += p.a_stride[d];
      ob += p.b_stride[d];
      if (++idx[d] < p.dims[d]) break;
      oa -= p.a_stride[d] * p.dims[d];
      ob -= p.b_stride[d] * p.dims[d];
      idx[d] = 0;
    }
  }
}

// RunPlan for rows of a short fixed length N (the 8 or 16 channels of a block in the blocked
// layout, runtime/blocked_layout.h, against a per-channel operand): the next dimension's
// loop runs inside, so the odometer moves once per run of it rather than once per N
// elements, and the row's loop unrolls into a vector operation or two.
template <int64_t N, typename T, typename Out, typename F, typename B = T>
void RunShortRows(const BroadcastPlan& p, const T* a, const B* b, Out* out, int64_t begin_row, int64_t end_row, F f) {
  const int inner = p.rank - 1, next = p.rank - 2;
  const bool ka = p.a_stride[inner] != 0, kb = p.b_stride[inner] != 0;
  const int64_t m = p.dims[next], sa = p.a_stride[next], sb = p.b_stride[next];
  int64_t idx[BroadcastPlan::kMaxRank] = {};
  int64_t rem = begin_row / m, oa = 0, ob = 0;
  for (int d = next - 1; d >= 0; --d) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    oa += idx[d] * p.a_stride[d];
    ob += idx[d] * p.b_stride[d];
  }
  const auto run = [&](const T* pa, const B* pb, Out* o, int64_t rows, auto a_moves, auto b_moves) {
    for (int64_t r = 0; r < rows; ++r, pa += sa, pb += sb, o += N) {
      for (int64_t i = 0; i < N; ++i) o[i] = f(pa[a_moves ? i : 0], pb[b_moves ? i : 0]);
    }
  };
  for (int64_t row = begin_row, r = begin_row % m; row < end_row; r = 0) {
    const int64_t rows = std::min(m - r, end_row - row);
    const T* pa = a + oa + r * sa;
    const B* pb = b + ob + r * sb;
    Out* o = out + row * N;
    if (ka && kb) run(pa, pb, o, rows, std::true_type(), std::true_type());
    else if (ka) run(pa, pb, o, rows, std::true_type(), std::false_type());
    else if (kb) run(pa, pb, o, rows, std::false_type(), std::true_type());
    else run(pa, pb, o, rows, std::false_type(), std::false_type());
    row += rows;
    for (int d = next - 1; d >= 0; --d) {
      oa += p.a_stride[d];
      ob += p.b_stride[d];
      if (++idx[d] < p.dims[d]) break;
      oa -= p.a_stride[d] * p.dims[d];
      ob -= p.b_stride[d] * p.dims[d];
      idx[d] = 0;
    }
  }
}

// Rows of fewer than 8 elements, one operand whole and the other a row of its own repeated
// (an image's 3 channels against their mean or deviation, as Keras's Normalization layer
// has them): rows that short do not vectorise (EfficientNet's Sub and RealDiv took 1.5 ns an
// element), so the repeated row is laid out kTiles times and the result made in runs of that
// length; the rows left over after the last whole run go as before. False where the plan is
// not of that form.
template <typename T, typename Out, typename F>
bool RunTiledRows(OpKernelContext* ctx, const BroadcastPlan& plan, const T* a, const T* b, Out* out, int64_t rows) {
  constexpr int64_t kTiles = 64;
  const int64_t n = plan.dims[1];
  const bool whole_a = plan.a_stride[0] == n && plan.a_stride[1] == 1;
  const bool whole_b = plan.b_stride[0] == n && plan.b_stride[1] == 1;
  const bool row_a = plan.a_stride[0] == 0 && plan.a_stride[1] == 1;
  const bool row_b = plan.b_stride[0] == 0 && plan.b_stride[1] == 1;
  if (rows < kTiles || !((whole_a && row_b) || (row_a && whole_b))) return false;
  T tiled[kTiles * 7];
  const T* row = row_a ? a : b;
  for (int64_t i = 0; i < kTiles * n; ++i) tiled[i] = row[i % n];
  const int64_t run = kTiles * n, runs = rows / kTiles;
  ctx->ParallelFor(runs, run * F::kCost, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (row_a) InnerLoop<T, Out, F, true, true>(tiled, b + r * run, out + r * run, run, F());
      else InnerLoop<T, Out, F, true, true>(a + r * run, tiled, out + r * run, run, F());
    }
  });
  RunPlan<T, Out>(plan, a, b, out, runs * kTiles, rows, 0, n, F());
  return true;
}

template <typename T, typename Out, typename F>
class BinaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    StatusOr<TensorShape> shape = InferenceContext::BroadcastShapes(a.shape(), b.shape());
    OP_REQUIRES_OK(ctx, shape.status());
    if constexpr (F::kChecksIntegerDivision) {
      if constexpr (std::is_integral_v<T>) {
        const T* bp = b.data<T>();
        for (int64_t i = 0; i < b.NumElements(); ++i) {
          OP_REQUIRES(ctx, bp[i] != 0, errors::InvalidArgument("Integer division by zero"));
        }
      }
    }
    // Read shapes and pointers first: forwarding moves an input's buffer into the output
    // (the pointers stay valid, the input Tensor does not).
    const TensorShape a_shape = a.shape(), b_shape = b.shape();
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    Tensor* out;
    if constexpr (std::is_same_v<T, Out>) {
      int in = a.shape() == *shape ? 0 : 1;
      OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(in, 0, *shape, &out));
    } else {
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    }
    if (out->NumElements() == 0) return;
    BroadcastPlan plan = MakeBroadcastPlan(a_shape, b_shape, *shape);
    const int64_t n = plan.dims[plan.rank - 1];
    const int64_t rows = out->NumElements() / n;
    Out* op = out->data<Out>();
    // Long rows are cut into chunks too: same-shape operands make one row, which would
    // otherwise run on one thread.
    constexpr int64_t kChunk = 16384;
    if ((n == 8 || n == 16) && plan.rank >= 2) {
      ctx->ParallelFor(rows, n * F::kCost, [&](int64_t begin, int64_t end) {
        if (n == 8) RunShortRows<8, T, Out>(plan, ap, bp, op, begin, end, F());
        else RunShortRows<16, T, Out>(plan, ap, bp, op, begin, end, F());
      });
      return;
    }
    if constexpr (std::is_arithmetic_v<T>) {
      if (n < 8 && plan.rank == 2 && RunTiledRows<T, Out, F>(ctx, plan, ap, bp, op, rows)) return;
    }
    if (n <= kChunk) {
      ctx->ParallelFor(rows, n * F::kCost, [&](int64_t begin, int64_t end) {
        RunPlan<T, Out>(plan, ap, bp, op, begin, end, 0, n, F());
      });
      return;
    }
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    ctx->ParallelFor(rows * chunks, kChunk * F::kCost, [&](int64_t begin, int64_t end) {
      for (int64_t unit = begin; unit < end; ++unit) {
        const int64_t row = unit / chunks, c0 = unit % chunks * kChunk;
        RunPlan<T, Out>(plan, ap, bp, op, row, row + 1, c0, std::min(n, c0 + kChunk), F());
      }
    });
  }
};

// _FusedScaleOffset: x * scale + offset and the activation in one pass, walked as a binary
// op of x and the (scale, offset) pairs, which broadcast as scale does.
class FusedScaleOffsetOp : public OpKernel {
 public:
  explicit FusedScaleOffsetOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string activation;
    Status s = c->GetAttr("activation", &activation);
    if (s.ok() && !activation.empty() && activation != "Relu" && activation != "Relu6") {
      s = errors::Unimplemented(type_string(), " with activation ", activation, ": only Relu and Relu6");
    }
    relu_ = activation == "Relu";
    relu6_ = activation == "Relu6";
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& scale = ctx->input(1);
    const Tensor& offset = ctx->input(2);
    StatusOr<TensorShape> shape = InferenceContext::BroadcastShapes(x.shape(), scale.shape());
    OP_REQUIRES_OK(ctx, shape.status());
    OP_REQUIRES(ctx, *shape == x.shape() && InferenceContext::SameButLeadingOnes(offset.shape(), scale.shape()),
                errors::InvalidArgument(name(), ": scale and offset must have one shape (but for leading 1s) that "
                                        "broadcasts into x's; x ",
                                        x.shape().DebugString(), ", scale ", scale.shape().DebugString(), ", offset ",
                                        offset.shape().DebugString()));
    // The longer of the two shapes: the pairs broadcast as the values of either would.
    const TensorShape x_shape = x.shape(),
                      pairs_shape = scale.rank() >= offset.rank() ? scale.shape() : offset.shape();
    std::vector<Pair> pairs(scale.NumElements());
    for (size_t i = 0; i < pairs.size(); ++i) pairs[i] = {scale.data<float>()[i], offset.data<float>()[i]};
    const float* xp = x.data<float>();
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, x_shape, &out));
    if (out->NumElements() == 0) return;
    const BroadcastPlan plan = MakeBroadcastPlan(x_shape, pairs_shape, x_shape);
    const int64_t n = plan.dims[plan.rank - 1], rows = out->NumElements() / n;
    float* op = out->data<float>();
    // The activations as Relu and Relu6 compute them (a NaN becomes 0).
    const auto run = [&](auto f) {
      ctx->ParallelFor(rows, n * 3, [&](int64_t begin, int64_t end) {
        if (n == 8 && plan.rank >= 2) RunShortRows<8, float, float>(plan, xp, pairs.data(), op, begin, end, f);
        else if (n == 16 && plan.rank >= 2) RunShortRows<16, float, float>(plan, xp, pairs.data(), op, begin, end, f);
        else RunPlan<float, float>(plan, xp, pairs.data(), op, begin, end, 0, n, f);
      });
    };
    if (relu_) {
      run([](float v, const Pair& p) { v = v * p.scale + p.offset; return v > 0 ? v : 0.f; });
    } else if (relu6_) {
      run([](float v, const Pair& p) { v = v * p.scale + p.offset; return v > 6 ? 6.f : v > 0 ? v : 0.f; });
    } else {
      run([](float v, const Pair& p) { return v * p.scale + p.offset; });
    }
  }

 private:
  struct Pair {
    float scale, offset;
  };
  bool relu_ = false, relu6_ = false;
};

// Integer arithmetic wraps around like TensorFlow's on two's-complement machines, computed
// in unsigned types so that overflow is defined behaviour.
template <typename T>
T Wrap(std::make_unsigned_t<T> v) {
  return static_cast<T>(v);
}
template <typename T>
using U = std::make_unsigned_t<T>;

// Python's // and % (floor division, a remainder with the divisor's sign); the caller has
// refused a zero divisor. min // -1 wraps to min.
template <typename T>
T FloorDivInt(T x, T y) {
  if (y == -1) return Wrap<T>(U<T>(0) - U<T>(x));
  const T q = x / y;
  return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}
template <typename T>
T FloorModInt(T x, T y) {
  if (y == -1) return 0;
  const T r = x % y;
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}
template <typename T>
T FloorModFloat(T x, T y) {
  const T r = std::fmod(x, y);
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}

#define TESSERA_BINARY_FUNCTOR(Name, int_expr, float_expr, cost, checks_div) \
  struct Name {                                                              \
    static constexpr int64_t kCost = cost;                                   \
    static constexpr bool kChecksIntegerDivision = checks_div;               \
    template <typename T>                                                    \
    auto operator()(const T& x, const T& y) const {                          \
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {     \
        return int_expr;                                                     \
      } else {                                                               \
        return float_expr;                                                   \
      }                                                                      \
    }                                                                        \
  };
TESSERA_BINARY_FUNCTOR(AddF, Wrap<T>(U<T>(x) + U<T>(y)), x + y, 1, false)
TESSERA_BINARY_FUNCTOR(SubF, Wrap<T>(U<T>(x) - U<T>(y)), x - y, 1, false)
TESSERA_BINARY_FUNCTOR(MulF, Wrap<T>(U<T>(x) * U<T>(y)), x * y, 1, false)
// Truncating integer division; min / -1 wraps to min.
TESSERA_BINARY_FUNCTOR(DivF, y == -1 ? Wrap<T>(U<T>(0) - U<T>(x)) : T(x / y), x / y, 4, true)
TESSERA_BINARY_FUNCTOR(FloorDivF, FloorDivInt<T>(x, y), std::floor(x / y), 8, true)
TESSERA_BINARY_FUNCTOR(FloorModF, FloorModInt<T>(x, y), FloorModFloat<T>(x, y), 8, true)
TESSERA_BINARY_FUNCTOR(PowF, x, std::pow(x, y), 16, false)  // floating types only
TESSERA_BINARY_FUNCTOR(MaxF, x > y ? x : y, x > y ? x : y, 1, false)
TESSERA_BINARY_FUNCTOR(MinF, x < y ? x : y, x < y ? x : y, 1, false)
TESSERA_BINARY_FUNCTOR(EqualF, x == y, x == y, 1, false)
TESSERA_BINARY_FUNCTOR(GreaterF, x > y, x > y, 1, false)
TESSERA_BINARY_FUNCTOR(LessF, x < y, x < y, 1, false)
TESSERA_BINARY_FUNCTOR(NotEqualF, x != y, x != y, 1, false)
TESSERA_BINARY_FUNCTOR(GreaterEqualF, x >= y, x >= y, 1, false)
TESSERA_BINARY_FUNCTOR(LessEqualF, x <= y, x <= y, 1, false)
TESSERA_BINARY_FUNCTOR(SquaredDifferenceF, Wrap<T>((U<T>(x) - U<T>(y)) * (U<T>(x) - U<T>(y))), (x - y) * (x - y), 2,
                       false)
TESSERA_BINARY_FUNCTOR(LogicalAndF, x && y, x && y, 1, false)
TESSERA_BINARY_FUNCTOR(LogicalOrF, x || y, x || y, 1, false)
// x: the forward output, y: the gradient (floating types only).
TESSERA_BINARY_FUNCTOR(SigmoidGradF, x, y * x * (T(1) - x), 4, false)
TESSERA_BINARY_FUNCTOR(TanhGradF, x, y * (T(1) - x * x), 4, false)
// x: the gradient, y: the forward input.
TESSERA_BINARY_FUNCTOR(ReluGradF, y > 0 ? x : T(0), y > 0 ? x : T(0), 1, false)
#undef TESSERA_BINARY_FUNCTOR

// Unary math through Eigen's vectorised array functions.
template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <typename T, typename F>
class UnaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const T* ip = in.data<T>();  // stays valid if the buffer is forwarded to the output
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, in.shape(), &out));
    T* op = out->data<T>();
    ctx->ParallelFor(out->NumElements(), F::kCost, [&](int64_t b, int64_t e) {
      if constexpr (std::is_integral_v<T>) {
        for (int64_t i = b; i < e; ++i) op[i] = F::Int(ip[i]);
      } else if constexpr (requires { F::Span(ip, op, int64_t{0}); }) {
        F::Span(ip + b, op + b, e - b);  // a loop of its own, for what Eigen has no packet of
      } else {
        ArrayMap<T>(op + b, e - b) = F::Array(ConstArrayMap<T>(ip + b, e - b));
      }
    });
  }
};

#define TESSERA_UNARY_FUNCTOR(Name, int_expr, array_expr, cost) \
  struct Name {                                                  \
    static constexpr int64_t kCost = cost;                       \
    template <typename T>                                        \
    static T Int(T x) {                                          \
      return int_expr;                                           \
    }                                                            \
    template <typename A>                                        \
    static auto Array(const A& x) {                              \
      return array_expr;                                         \
    }                                                            \
  };
TESSERA_UNARY_FUNCTOR(NegF, Wrap<T>(U<T>(0) - U<T>(x)), -x, 1)
TESSERA_UNARY_FUNCTOR(SquareF, Wrap<T>(U<T>(x) * U<T>(x)), x.square(), 1)
TESSERA_UNARY_FUNCTOR(SqrtF, x, x.sqrt(), 8)
TESSERA_UNARY_FUNCTOR(RsqrtF, x, x.rsqrt(), 8)
TESSERA_UNARY_FUNCTOR(ExpF, x, x.exp(), 16)
TESSERA_UNARY_FUNCTOR(ErfF, x, x.unaryExpr([](typename A::Scalar v) { return std::erf(v); }), 24)
// erfc of floats as Numerical Recipes' erfcc (fractional error below 1.2e-7; 1.05e-7
// measured over [-10, 10] against a double erfc; evaluated in float, 4.1e-7 with AVX2's exp
// and 5.2e-7 with AVX-512's, mostly the polynomial's rounding), in vector lanes with
// Eigen's exp: std::erfc, an element at a time, was a fifth of the Transformer's time at
// batch 32 (its GELU). x * x is carried as hi + lo (exact with an FMA) and exp(-hi) taken in
// two halves where it would leave float's normal range, so that neither the rounding of
// x * x nor Eigen's exp clamping its argument shows in the tail.
void ErfcFloats(const float* x, float* out, int64_t n) {
  constexpr int64_t kBlock = 64;
  using Block = Eigen::Array<float, kBlock, 1>;
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t m = std::min(kBlock, n - i);
    Block v = Block::Zero();
    for (int64_t j = 0; j < m; ++j) v[j] = x[i + j];
    // From 10.1 on erfc rounds to 0 in float; past 13 exp(-x * x / 2) would leave its range.
    const Block z = v.abs().min(13.0f);
    const Block t = (1.0f + 0.5f * z).inverse();
    Block p = Block::Constant(0.17087277f);
    for (float c : {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,
                    1.00002368f}) {
      p = c + t * p;
    }
    const Block hi = z * z;
    // Plain loops for what takes a condition: an Eigen expression with a select in it is
    // evaluated an element at a time, its exp by libm's expf (the Transformer's GELU at
    // batch 32 took 247 us so, 36 us now).
    Block lo, scale;
    for (int64_t j = 0; j < kBlock; ++j) {
      lo[j] = std::fma(z[j], z[j], -hi[j]);
      scale[j] = hi[j] > 87.0f ? 0.5f : 1.0f;  // halves only past exp's normal range
    }
    const Block e = (-(scale * hi)).exp();
    const Block tail = t * (t * p - 1.26551223f - lo).exp() * e;
    for (int64_t j = 0; j < m; ++j) {
      const float value = scale[j] < 1.0f ? tail[j] * e[j] : tail[j];
      out[i + j] = std::isnan(v[j]) ? v[j] : v[j] >= 0.0f ? value : 2.0f - value;
    }
  }
}

// Floats through ErfcFloats; doubles keep std::erfc, which its error bound would not match.
struct ErfcF {
  static constexpr int64_t kCost = 24;
  template <typename T>
  static T Int(T x) {
    return x;
  }
  static void Span(const float* x, float* out, int64_t n) { ErfcFloats(x, out, n); }
  template <typename A>
  static auto Array(const A& x) {
    return x.unaryExpr([](typename A::Scalar v) { return std::erfc(v); });
  }
};
TESSERA_UNARY_FUNCTOR(LogF, x, x.log(), 16)
TESSERA_UNARY_FUNCTOR(ReluF, x > 0 ? x : T(0), x.max(typename A::Scalar(0)), 1)
TESSERA_UNARY_FUNCTOR(Relu6F, x > 6 ? T(6) : x > 0 ? x : T(0),
                      x.max(typename A::Scalar(0)).min(typename A::Scalar(6)), 1)
TESSERA_UNARY_FUNCTOR(SigmoidF, x, x.logistic(), 24)
TESSERA_UNARY_FUNCTOR(SwishF, x, x * x.logistic(), 25)
TESSERA_UNARY_FUNCTOR(TanhF, x, x.tanh(), 24)
TESSERA_UNARY_FUNCTOR(SinF, x, x.sin(), 16)
TESSERA_UNARY_FUNCTOR(CosF, x, x.cos(), 16)
TESSERA_UNARY_FUNCTOR(LogicalNotF, !x, x, 1)  // bool only, which takes the integral path
#undef TESSERA_UNARY_FUNCTOR

template <typename F>
constexpr bool IsComparison = std::is_same_v<F, EqualF> || std::is_same_v<F, NotEqualF> || std::is_same_v<F, GreaterF> ||
                              std::is_same_v<F, LessF> || std::is_same_v<F, GreaterEqualF> ||
                              std::is_same_v<F, LessEqualF>;

template <typename F, typename... Ts>
void RegisterBinary(KernelRegistry& r, const char* op) {
  ForEachType<Ts...>([&](auto zero) {
    using T = decltype(zero);
    using Out = std::conditional_t<IsComparison<F>, bool, T>;
    r.Register<BinaryOp<T, Out, F>>(KernelDefBuilder(op).Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
}

template <typename F, typename... Ts>
void RegisterUnary(KernelRegistry& r, const char* op) {
  ForEachType<Ts...>([&](auto zero) {
    using T = decltype(zero);
    r.Register<UnaryOp<T, F>>(KernelDefBuilder(op).Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
}

template <typename T>
class AddNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const TensorShape& shape = ctx->input(0).shape();
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      OP_REQUIRES(ctx, ctx->input(i).shape() == shape,
                  errors::InvalidArgument("AddN inputs must have the same shape: input 0 is ",
                                          shape.DebugString(), ", input ", i, " is ",
                                          ctx->input(i).shape().DebugString()));
    }
    std::vector<const T*> in(ctx->num_inputs());
    for (int i = 0; i < ctx->num_inputs(); ++i) in[i] = ctx->input(i).data<T>();
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, shape, &out));
    T* op = out->data<T>();
    const AddF add;
    ctx->ParallelFor(out->NumElements(), static_cast<int64_t>(in.size()),
                                      [&](int64_t b, int64_t e) {
                                        for (int64_t j = b; j < e; ++j) {
                                          T acc = in[0][j];
                                          for (size_t i = 1; i < in.size(); ++i) acc = add(acc, in[i][j]);
                                          op[j] = acc;
                                        }
                                      });
  }
};

}  // namespace

void RegisterCwiseKernels(KernelRegistry& r) {
  RegisterBinary<AddF, float, double, int32_t, int64_t>(r, "Add");
  RegisterBinary<AddF, float, double, int32_t, int64_t>(r, "AddV2");
  RegisterBinary<DivF, float, double>(r, "RealDiv");
  RegisterBinary<PowF, float, double>(r, "Pow");
  RegisterBinary<SubF, float, double, int32_t, int64_t>(r, "Sub");
  RegisterBinary<MulF, float, double, int32_t, int64_t>(r, "Mul");
  RegisterBinary<DivF, float, double, int32_t, int64_t>(r, "Div");
  RegisterBinary<DivF, int32_t, int64_t>(r, "TruncateDiv");
  RegisterBinary<FloorDivF, float, double, int32_t, int64_t>(r, "FloorDiv");
  RegisterBinary<FloorModF, float, double, int32_t, int64_t>(r, "FloorMod");
  RegisterBinary<MaxF, float, double, int32_t, int64_t>(r, "Maximum");
  RegisterBinary<MinF, float, double, int32_t, int64_t>(r, "Minimum");
  RegisterBinary<SquaredDifferenceF, float, double, int32_t, int64_t>(r, "SquaredDifference");
  RegisterBinary<EqualF, float, double, int32_t, int64_t, bool, std::string>(r, "Equal");
  RegisterBinary<GreaterF, float, double, int32_t, int64_t>(r, "Greater");
  RegisterBinary<LessF, float, double, int32_t, int64_t>(r, "Less");
  RegisterBinary<NotEqualF, float, double, int32_t, int64_t, bool, std::string>(r, "NotEqual");
  RegisterBinary<GreaterEqualF, float, double, int32_t, int64_t>(r, "GreaterEqual");
  RegisterBinary<LessEqualF, float, double, int32_t, int64_t>(r, "LessEqual");
  r.Register<BinaryOp<bool, bool, LogicalAndF>>(KernelDefBuilder("LogicalAnd").Device(kDeviceCpu));
  r.Register<BinaryOp<bool, bool, LogicalOrF>>(KernelDefBuilder("LogicalOr").Device(kDeviceCpu));
  r.Register<UnaryOp<bool, LogicalNotF>>(KernelDefBuilder("LogicalNot").Device(kDeviceCpu));
  RegisterBinary<ReluGradF, float, double, int32_t, int64_t>(r, "ReluGrad");
  RegisterBinary<SigmoidGradF, float, double>(r, "SigmoidGrad");
  RegisterBinary<TanhGradF, float, double>(r, "TanhGrad");

  ForEachType<float, double, int32_t, int64_t>([&](auto zero) {
    using T = decltype(zero);
    r.Register<AddNOp<T>>(KernelDefBuilder("AddN").Device(kDeviceCpu).TypeConstraint<T>("T"));
  });

  RegisterUnary<NegF, float, double, int32_t, int64_t>(r, "Neg");
  RegisterUnary<SquareF, float, double, int32_t, int64_t>(r, "Square");
  RegisterUnary<SqrtF, float, double>(r, "Sqrt");
  RegisterUnary<RsqrtF, float, double>(r, "Rsqrt");
  RegisterUnary<ErfF, float, double>(r, "Erf");
  RegisterUnary<ErfcF, float, double>(r, "Erfc");
  RegisterUnary<ExpF, float, double>(r, "Exp");
  RegisterUnary<LogF, float, double>(r, "Log");
  RegisterUnary<SigmoidF, float, double>(r, "Sigmoid");
  RegisterUnary<SwishF, float, double>(r, "_Swish");
  RegisterUnary<TanhF, float, double>(r, "Tanh");
  RegisterUnary<SinF, float, double>(r, "Sin");
  RegisterUnary<CosF, float, double>(r, "Cos");
  RegisterUnary<ReluF, float, double, int32_t, int64_t>(r, "Relu");
  RegisterUnary<Relu6F, float, double, int32_t, int64_t>(r, "Relu6");
  r.Register<FusedScaleOffsetOp>(KernelDefBuilder("_FusedScaleOffset").Device(kDeviceCpu).TypeConstraint<float>("T"));
}

void RegisterHostInt32CwiseKernels(KernelRegistry& r, const std::string& device_type) {
  auto binary = [&](auto kernel, const char* op) {
    r.Register<typename decltype(kernel)::type>(KernelDefBuilder(op)
                                                    .Device(device_type)
                                                    .TypeConstraint<int32_t>("T")
                                                    .HostMemory("x")
                                                    .HostMemory("y")
                                                    .HostMemory("z"));
  };
  binary(std::type_identity<BinaryOp<int32_t, int32_t, AddF>>{}, "Add");
  binary(std::type_identity<BinaryOp<int32_t, int32_t, AddF>>{}, "AddV2");
  binary(std::type_identity<BinaryOp<int32_t, int32_t, SubF>>{}, "Sub");
  binary(std::type_identity<BinaryOp<int32_t, int32_t, MulF>>{}, "Mul");
  binary(std::type_identity<BinaryOp<int32_t, int32_t, DivF>>{}, "Div");
  binary(std::type_identity<BinaryOp<int32_t, int32_t, MaxF>>{}, "Maximum");
  binary(std::type_identity<BinaryOp<int32_t, int32_t, MinF>>{}, "Minimum");
  auto unary = [&](auto kernel, const char* op) {
    r.Register<typename decltype(kernel)::type>(
        KernelDefBuilder(op).Device(device_type).TypeConstraint<int32_t>("T").HostMemory("x").HostMemory("y"));
  };
  unary(std::type_identity<UnaryOp<int32_t, NegF>>{}, "Neg");
  unary(std::type_identity<UnaryOp<int32_t, SquareF>>{}, "Square");
}

}  // namespace tessera::cpu
