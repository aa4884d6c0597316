// Optimizer updates applied in place to a variable and its accumulators: TensorFlow's
// ApplyGradientDescent, ApplyMomentum, ApplyRMSProp and ApplyAdam, with its formulas, and
// their ResourceApply twins, which take handles and output nothing.
#include <cmath>

#include "devices/cpu/cpu_kernels.h"
#include "kernels/resources/variable.h"

namespace tessera::cpu {
namespace {

template <typename T>
StatusOr<T> Scalar(OpKernelContext* ctx, int i, std::string_view what) {
  const Tensor& t = ctx->input(i);
  if (t.NumElements() != 1) {
    return errors::InvalidArgument(what, " is not a scalar: ", t.shape().DebugString());
  }
  return t.data<T>()[0];
}

// The apply ops' update through UpdateRefInputs, with the buffers as T*.
template <typename T>
Status UpdateRefs(OpKernelContext* ctx, std::vector<int> refs, const Tensor& grad,
                  const std::function<void(const std::vector<T*>&)>& fn) {
  return UpdateRefInputs(ctx, std::move(refs), grad.shape(), [&](const std::vector<Tensor*>& values) {
    std::vector<T*> bufs;
    for (Tensor* v : values) bufs.push_back(v->data<T>());
    fn(bufs);
  });
}

// Runs body(i) for every element on the intra-op pool. `body` captures by value, and each
// block runs its own copy, which no store through the buffers can reach: its captures stay
// in registers and the loop vectorizes (ApplyRMSProp took 237 us for the CNN's 100k-weight
// dense kernel one element at a time).
template <typename F>
void ForEachElement(OpKernelContext* ctx, int64_t n, int64_t cost, const F& body) {
  ctx->ParallelFor(n, cost, [&](int64_t b, int64_t e) {
    F local = body;
    for (int64_t i = b; i < e; ++i) local(i);
  });
}

template <typename T>
class ApplyGradientDescentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto alpha = Scalar<T>(ctx, 1, "alpha");
    OP_REQUIRES_OK(ctx, alpha.status());
    const Tensor& delta = ctx->input(2);
    const T* d = delta.data<T>();
    const T a = *alpha;
    OP_REQUIRES_OK(ctx, UpdateRefs<T>(ctx, {0}, delta, [&](const std::vector<T*>& v) {
                     T* var = v[0];
                     ForEachElement(ctx, delta.NumElements(), 2, [=](int64_t i) { var[i] -= a * d[i]; });
                   }));
    if (num_outputs() > 0) ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

// accum = momentum * accum + grad; var -= lr * accum (Nesterov: lr * (grad + momentum * accum)).
template <typename T>
class ApplyMomentumOp : public OpKernel {
 public:
  explicit ApplyMomentumOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("use_nesterov", &nesterov_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    auto lr = Scalar<T>(ctx, 2, "lr");
    OP_REQUIRES_OK(ctx, lr.status());
    auto momentum = Scalar<T>(ctx, 4, "momentum");
    OP_REQUIRES_OK(ctx, momentum.status());
    const Tensor& grad = ctx->input(3);
    const T* g = grad.data<T>();
    const T rate = *lr, mu = *momentum;
    const bool nesterov = nesterov_;
    OP_REQUIRES_OK(ctx, UpdateRefs<T>(ctx, {0, 1}, grad, [&](const std::vector<T*>& b) {
                     T* var = b[0];
                     T* accum = b[1];
                     ForEachElement(ctx, grad.NumElements(), 4, [=](int64_t i) {
                       accum[i] = accum[i] * mu + g[i];
                       var[i] -= nesterov ? (g[i] + accum[i] * mu) * rate : accum[i] * rate;
                     });
                   }));
    if (num_outputs() > 0) ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool nesterov_ = false;
};

// ms = rho * ms + (1 - rho) * grad^2; mom = momentum * mom + lr * grad / sqrt(ms + epsilon);
// var -= mom.
template <typename T>
class ApplyRMSPropOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    T hp[4];
    const char* names[4] = {"lr", "rho", "momentum", "epsilon"};
    for (int k = 0; k < 4; ++k) {
      auto v = Scalar<T>(ctx, 3 + k, names[k]);
      OP_REQUIRES_OK(ctx, v.status());
      hp[k] = *v;
    }
    const T lr = hp[0], rho = hp[1], momentum = hp[2], eps = hp[3];
    const Tensor& grad = ctx->input(7);
    const T* g = grad.data<T>();
    OP_REQUIRES_OK(ctx, UpdateRefs<T>(ctx, {0, 1, 2}, grad, [&](const std::vector<T*>& b) {
                     T* var = b[0];
                     T* ms = b[1];
                     T* mom = b[2];
                     ForEachElement(ctx, grad.NumElements(), 16, [=](int64_t i) {
                       ms[i] = rho * ms[i] + (1 - rho) * g[i] * g[i];
                       mom[i] = momentum * mom[i] + lr * g[i] / std::sqrt(ms[i] + eps);
                       var[i] -= mom[i];
                     });
                   }));
    if (num_outputs() > 0) ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

// m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2;
// var -= lr sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + epsilon).
template <typename T>
class ApplyAdamOp : public OpKernel {
 public:
  explicit ApplyAdamOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("use_nesterov", &nesterov_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    T hp[6];
    const char* names[6] = {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"};
    for (int k = 0; k < 6; ++k) {
      auto v = Scalar<T>(ctx, 3 + k, names[k]);
      OP_REQUIRES_OK(ctx, v.status());
      hp[k] = *v;
    }
    const T b1p = hp[0], b2p = hp[1], lr = hp[2], b1 = hp[3], b2 = hp[4], eps = hp[5];
    const T lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
    const Tensor& grad = ctx->input(9);
    const T* g = grad.data<T>();
    const bool nesterov = nesterov_;
    OP_REQUIRES_OK(ctx, UpdateRefs<T>(ctx, {0, 1, 2}, grad, [&](const std::vector<T*>& b) {
                     T* var = b[0];
                     T* m = b[1];
                     T* v = b[2];
                     ForEachElement(ctx, grad.NumElements(), 16, [=](int64_t i) {
                       m[i] += (g[i] - m[i]) * (1 - b1);
                       v[i] += (g[i] * g[i] - v[i]) * (1 - b2);
                       const T step = nesterov ? m[i] * b1 + (1 - b1) * g[i] : m[i];
                       var[i] -= lr_t * step / (std::sqrt(v[i]) + eps);
                     });
                   }));
    if (num_outputs() > 0) ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool nesterov_ = false;
};

}  // namespace

void RegisterTrainingKernels(KernelRegistry& r) {
  ForEachType<float, double>([&](auto zero) {
    using T = decltype(zero);
    r.Register<ApplyGradientDescentOp<T>>(KernelDefBuilder("ApplyGradientDescent").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ApplyMomentumOp<T>>(KernelDefBuilder("ApplyMomentum").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ApplyRMSPropOp<T>>(KernelDefBuilder("ApplyRMSProp").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ApplyAdamOp<T>>(KernelDefBuilder("ApplyAdam").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ApplyGradientDescentOp<T>>(
        KernelDefBuilder("ResourceApplyGradientDescent").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ApplyMomentumOp<T>>(KernelDefBuilder("ResourceApplyMomentum").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ApplyRMSPropOp<T>>(KernelDefBuilder("ResourceApplyRMSProp").Device(kDeviceCpu).TypeConstraint<T>("T"));
    r.Register<ApplyAdamOp<T>>(KernelDefBuilder("ResourceApplyAdam").Device(kDeviceCpu).TypeConstraint<T>("T"));
  });
}

}  // namespace tessera::cpu
