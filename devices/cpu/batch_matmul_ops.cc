// BatchMatMul, BatchMatMulV2 (batch dimensions broadcast) and Einsum of two operands, which
// becomes a transpose of each operand, one batched product and a transpose of the result,
// as TensorFlow's EinsumOp does.
#include <Eigen/Core>

#include <map>

#include "devices/cpu/cpu_kernels.h"
#include "graph/shape_inference.h"

namespace tessera::cpu {
namespace {

template <typename T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// x [..., M, K] times y [..., K, N] (either adjoint first), the leading dimensions
// broadcast; `out` is allocated as output 0.
template <typename T>
Status BatchMatMul(OpKernelContext* ctx, const Tensor& x, const Tensor& y, bool adj_x, bool adj_y, bool broadcast,
                   Tensor* result = nullptr) {
  if (x.rank() < 2 || y.rank() < 2) {
    return errors::InvalidArgument("BatchMatMul takes tensors of rank >= 2, got ", x.shape().DebugString(), " and ",
                                   y.shape().DebugString());
  }
  const int64_t m = adj_x ? x.dim(x.rank() - 1) : x.dim(x.rank() - 2);
  const int64_t k = adj_x ? x.dim(x.rank() - 2) : x.dim(x.rank() - 1);
  const int64_t k2 = adj_y ? y.dim(y.rank() - 1) : y.dim(y.rank() - 2);
  const int64_t n = adj_y ? y.dim(y.rank() - 2) : y.dim(y.rank() - 1);
  if (k != k2) {
    return errors::InvalidArgument("Matrix size-incompatible: In[0]: ", x.shape().DebugString(), ", In[1]: ",
                                   y.shape().DebugString());
  }
  TensorShape xb, yb;
  for (int i = 0; i < x.rank() - 2; ++i) xb.AddDim(x.dim(i));
  for (int i = 0; i < y.rank() - 2; ++i) yb.AddDim(y.dim(i));
  if (!broadcast && !(xb == yb)) {
    return errors::InvalidArgument("BatchMatMul's batch dimensions differ: ", x.shape().DebugString(), " and ",
                                   y.shape().DebugString());
  }
  ASSIGN_OR_RETURN(TensorShape batch, InferenceContext::BroadcastShapes(xb, yb));
  TensorShape out_shape = batch;
  out_shape.AddDim(m);
  out_shape.AddDim(n);
  Tensor* out = result;
  if (out == nullptr) RETURN_IF_ERROR(ctx->allocate_output(0, out_shape, &out));
  // The flat index into x's and y's batches of each output batch, broadcasting size-1 dims.
  const int64_t batches = batch.num_elements();
  auto offset = [&](const TensorShape& b, int64_t flat) {
    int64_t index = 0, stride = 1;
    for (int d = batch.rank() - 1, e = b.rank() - 1; d >= 0; --d, --e) {
      const int64_t coord = flat % batch.dim(d);
      flat /= batch.dim(d);
      if (e >= 0) {
        if (b.dim(e) != 1) index += coord * stride;
        stride *= b.dim(e);
      }
    }
    return index;
  };
  const T* xp = x.data<T>();
  const T* yp = y.data<T>();
  T* op = out->data<T>();
  ctx->ParallelFor(batches, m * n * k, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      Eigen::Map<const Matrix<T>> xm(xp + offset(xb, b) * m * k, adj_x ? k : m, adj_x ? m : k);
      Eigen::Map<const Matrix<T>> ym(yp + offset(yb, b) * k * n, adj_y ? n : k, adj_y ? k : n);
      Eigen::Map<Matrix<T>> om(op + b * m * n, m, n);
      if (adj_x && adj_y) {
        om.noalias() = xm.transpose() * ym.transpose();
      } else if (adj_x) {
        om.noalias() = xm.transpose() * ym;
      } else if (adj_y) {
        om.noalias() = xm * ym.transpose();
      } else {
        om.noalias() = xm * ym;
      }
    }
  });
  return Status::OK();
}

template <typename T>
class BatchMatMulOp : public OpKernel {
 public:
  explicit BatchMatMulOp(OpKernelConstruction* c) : OpKernel(c), broadcast_(c->node().op() == "BatchMatMulV2") {
    Status s = c->GetAttr("adj_x", &adj_x_);
    if (s.ok()) s = c->GetAttr("adj_y", &adj_y_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES_OK(ctx, BatchMatMul<T>(ctx, ctx->input(0), ctx->input(1), adj_x_, adj_y_, broadcast_));
  }

 private:
  const bool broadcast_;
  bool adj_x_ = false, adj_y_ = false;
};

// `in` with its dimensions in the order `perm`: `in` itself for the identity (the usual case
// for a layer's projection, "abc,cde->abde"), whole rows copied where the last dimension
// stays last.
template <typename T>
Tensor Transposed(const Tensor& in, const std::vector<int>& perm) {
  const int rank = in.rank();
  bool identity = true;
  for (int d = 0; d < rank; ++d) identity = identity && perm[d] == d;
  if (identity) return in;
  TensorShape shape;
  for (int p : perm) shape.AddDim(in.dim(p));
  Tensor out(in.dtype(), shape);
  if (out.NumElements() == 0) return out;
  std::vector<int64_t> in_strides(static_cast<size_t>(rank), 1), index(static_cast<size_t>(rank), 0);
  for (int d = rank - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * in.dim(d + 1);
  // Each step copies `run` elements: a whole last dimension when it stays last, else one.
  const int64_t run = perm[rank - 1] == rank - 1 ? shape.dim(rank - 1) : 1;
  const int outer = run > 1 ? rank - 1 : rank;
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  for (int64_t i = 0; i < out.NumElements(); i += run) {
    int64_t at = 0;
    for (int d = 0; d < outer; ++d) at += index[d] * in_strides[perm[d]];
    std::copy(src + at, src + at + run, dst + i);
    for (int d = outer - 1; d >= 0; --d) {
      if (++index[d] < shape.dim(d)) break;
      index[d] = 0;
    }
  }
  return out;
}

// "abc,cde->abde" split into its operands' and output's labels.
struct Equation {
  std::string a, b, out;
};

StatusOr<Equation> ParseEquation(const std::string& eq) {
  const size_t arrow = eq.find("->"), comma = eq.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow ||
      eq.find(',', comma + 1) != std::string::npos) {
    return errors::Unimplemented("Einsum equation '", eq, "': Tessera runs two operands and an explicit output");
  }
  Equation e{eq.substr(0, comma), eq.substr(comma + 1, arrow - comma - 1), eq.substr(arrow + 2)};
  for (const std::string* s : {&e.a, &e.b, &e.out}) {
    std::set<char> seen;
    for (char c : *s) {
      if (!std::isalpha(static_cast<unsigned char>(c)) || !seen.insert(c).second) {
        return errors::Unimplemented("Einsum equation '", eq, "': an ellipsis, a repeated label or a '", c,
                                     "' in one operand");
      }
    }
  }
  return e;
}

template <typename T>
class EinsumOp : public OpKernel {
 public:
  explicit EinsumOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string eq;
    Status s = c->GetAttr("equation", &eq);
    if (s.ok() && num_inputs() != 2) s = errors::Unimplemented("Einsum of ", num_inputs(), " operands; Tessera runs 2");
    if (s.ok()) {
      StatusOr<Equation> parsed = ParseEquation(eq);
      s = parsed.status();
      if (s.ok()) eq_ = *parsed;
    }
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    OP_REQUIRES(ctx, a.rank() == static_cast<int>(eq_.a.size()) && b.rank() == static_cast<int>(eq_.b.size()),
                errors::InvalidArgument("Einsum operands of shapes ", a.shape().DebugString(), " and ",
                                        b.shape().DebugString(), " for '", eq_.a, ",", eq_.b, "'"));
    std::map<char, int64_t> size;
    for (auto [labels, t] : {std::pair{&eq_.a, &a}, {&eq_.b, &b}}) {
      for (size_t i = 0; i < labels->size(); ++i) {
        auto [it, fresh] = size.emplace((*labels)[i], t->dim(static_cast<int>(i)));
        OP_REQUIRES(ctx, fresh || it->second == t->dim(static_cast<int>(i)),
                    errors::InvalidArgument("Einsum label '", (*labels)[i], "' is ", it->second, " and ",
                                            t->dim(static_cast<int>(i))));
      }
    }
    // batch: in both and the output; contract: in both only; free: in one and the output.
    std::string batch, contract, free_a, free_b;
    for (char c : eq_.out) {
      const bool in_a = eq_.a.find(c) != std::string::npos, in_b = eq_.b.find(c) != std::string::npos;
      OP_REQUIRES(ctx, in_a || in_b, errors::InvalidArgument("Einsum output label '", c, "' is in no operand"));
      (in_a && in_b ? batch : in_a ? free_a : free_b) += c;
    }
    for (char c : eq_.a) {
      if (eq_.out.find(c) != std::string::npos) continue;
      OP_REQUIRES(ctx, eq_.b.find(c) != std::string::npos,
                  errors::Unimplemented("Einsum label '", c, "' summed within one operand"));
      contract += c;
    }
    auto perm = [](const std::string& labels, const std::string& order) {
      std::vector<int> p;
      for (char c : order) p.push_back(static_cast<int>(labels.find(c)));
      return p;
    };
    auto product = [&](const std::string& labels) {
      int64_t n = 1;
      for (char c : labels) n *= size[c];
      return n;
    };
    // Each operand may enter the product as it is or transposed (adj), and the product may
    // be taken in either order: of those layouts, the ones its labels are already in, or
    // that keep its last dimension last (a copy of whole rows), cost least to make.
    auto cost = [](const std::string& labels, const std::string& order) {
      return labels == order ? 0 : !labels.empty() && !order.empty() && labels.back() == order.back() ? 1 : 2;
    };
    auto pick = [&](const std::string& labels, const std::string& plain, const std::string& adjoint, bool* adj) {
      *adj = cost(labels, adjoint) < cost(labels, plain);
      return *adj ? adjoint : plain;
    };
    // [batch, free_a, free_b] as A.B, or [batch, free_b, free_a] as B'.A'.
    const bool swap = cost(batch + free_b + free_a, eq_.out) < cost(batch + free_a + free_b, eq_.out);
    const std::string& left_labels = swap ? eq_.b : eq_.a;
    const std::string& right_labels = swap ? eq_.a : eq_.b;
    const std::string& left_free = swap ? free_b : free_a;
    const std::string& right_free = swap ? free_a : free_b;
    bool adj_x, adj_y;
    const std::string left_order = pick(left_labels, batch + left_free + contract, batch + contract + left_free, &adj_x);
    const std::string right_order =
        pick(right_labels, batch + contract + right_free, batch + right_free + contract, &adj_y);
    const int64_t nb = product(batch), m = product(left_free), k = product(contract), n = product(right_free);
    const Tensor& left = swap ? b : a;
    const Tensor& right = swap ? a : b;
    StatusOr<Tensor> x = Transposed<T>(left, perm(left_labels, left_order))
                             .Reshaped(adj_x ? TensorShape({nb, k, m}) : TensorShape({nb, m, k}));
    StatusOr<Tensor> y = Transposed<T>(right, perm(right_labels, right_order))
                             .Reshaped(adj_y ? TensorShape({nb, n, k}) : TensorShape({nb, k, n}));
    OP_REQUIRES_OK(ctx, x.status());
    OP_REQUIRES_OK(ctx, y.status());
    Tensor product3(a.dtype(), TensorShape({nb, m, n}));
    OP_REQUIRES_OK(ctx, BatchMatMul<T>(ctx, *x, *y, adj_x, adj_y, false, &product3));
    const std::string natural = batch + left_free + right_free;
    TensorShape shape;
    for (char c : natural) shape.AddDim(size[c]);
    StatusOr<Tensor> result = product3.Reshaped(shape);
    OP_REQUIRES_OK(ctx, result.status());
    ctx->set_output(0, Transposed<T>(*result, perm(natural, eq_.out)));
  }

 private:
  Equation eq_;
};

}  // namespace

void RegisterBatchMatMulKernels(KernelRegistry& r) {
  ForEachType<float, double>([&](auto zero) {
    using T = decltype(zero);
    for (const char* op : {"BatchMatMul", "BatchMatMulV2"}) {
      r.Register<BatchMatMulOp<T>>(KernelDefBuilder(op).Device(kDeviceCpu).TypeConstraint<T>("T"));
    }
    r.Register<EinsumOp<T>>(KernelDefBuilder("Einsum").Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
}

}  // namespace tessera::cpu
