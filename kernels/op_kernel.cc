#include "kernels/op_kernel.h"

#include <algorithm>
#include <condition_variable>

#include "graph/device_name.h"
#include "graph/graph_spec.h"
#include "graph/op_kinds.h"

namespace tessera {

OpKernel::OpKernel(OpKernelConstruction* c)
    : name_(c->node().name()),
      type_(c->node().op()),
      device_(c->device() != nullptr ? c->device()->name() : std::string()),
      input_types_([&] {
        std::vector<DataType> t;
        for (int i = 0; i < c->node().num_inputs(); ++i) t.push_back(c->node().input_type(i));
        return t;
      }()),
      output_types_([&] {
        std::vector<DataType> t;
        for (int i = 0; i < c->node().num_outputs(); ++i) t.push_back(c->node().output_type(i));
        return t;
      }()),
      input_is_ref_([&] {
        std::vector<bool> r;
        for (int i = 0; i < c->node().num_inputs(); ++i) r.push_back(c->node().input_is_ref(i));
        return r;
      }()),
      output_is_ref_([&] {
        std::vector<bool> r;
        for (int i = 0; i < c->node().num_outputs(); ++i) r.push_back(c->node().output_is_ref(i));
        return r;
      }()),
      input_memory_types_(c->input_memory_types()),
      output_memory_types_(c->output_memory_types()),
      output_gpu_compatible_([&] {
        std::vector<bool> r(c->node().num_outputs(), false);
        for (const Edge* e : c->node().out_edges()) {
          if (e->IsControl() || !IsSend(e->dst->op())) continue;
          std::string recv_device;
          if (!e->dst->GetAttr("recv_device", &recv_device).ok()) continue;
          StatusOr<DeviceName> to = DeviceName::Parse(recv_device);
          if (to.ok() && to->type == "GPU") r[e->src_output] = true;
        }
        return r;
      }()) {}

void AsyncOpKernel::Compute(OpKernelContext* ctx) {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  ComputeAsync(ctx, [&] {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return finished; });
}

CancellationManager::Token CancellationManager::NewToken() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_++;
}

bool CancellationManager::RegisterCallback(Token token, std::function<void()> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_.load(std::memory_order_relaxed)) return false;
  callbacks_.emplace(token, std::move(callback));
  return true;
}

bool CancellationManager::DeregisterCallback(Token token) {
  std::lock_guard<std::mutex> lock(mu_);
  return callbacks_.erase(token) == 1;
}

void CancellationManager::StartCancel() {
  std::map<Token, std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_.load(std::memory_order_relaxed)) return;
    cancelled_.store(true, std::memory_order_release);
    callbacks.swap(callbacks_);
  }
  for (auto& [token, cb] : callbacks) cb();
}

void OpKernelContext::ParallelFor(int64_t total, int64_t cost_per_unit,
                                  const std::function<void(int64_t, int64_t)>& fn) {
  // About 2^24 cycles, a few milliseconds, between two looks at the cancellation.
  constexpr int64_t kPieceCost = int64_t{1} << 24;
  const int64_t piece = std::max<int64_t>(1, kPieceCost / std::max<int64_t>(1, cost_per_unit));
  intra_op_pool()->ParallelFor(total, cost_per_unit, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end && !IsCancelled(); b += piece) fn(b, std::min(end, b + piece));
  });
  if (IsCancelled()) SetStatus(errors::Cancelled("Step was cancelled"));
}

Status OpKernelContext::allocate_output(int i, const TensorShape& shape, Tensor** out) {
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(p_.device->GetAllocator(output_alloc_attr(i)),
                                              p_.kernel->output_type(i), shape, p_.device->name()));
  p_.outputs[i].tensor = std::move(t);
  *out = &p_.outputs[i].tensor;
  return Status::OK();
}

Status OpKernelContext::forward_input_or_allocate_output(int in, int i, const TensorShape& shape,
                                                         Tensor** out) {
  Tensor& input = p_.inputs[in].tensor;
  if (p_.inputs[in].ref == nullptr && input.BufferIsUnshared() &&
      input.dtype() == p_.kernel->output_type(i) && input.shape() == shape &&
      p_.kernel->input_memory_type(in) == p_.kernel->output_memory_type(i) &&
      DataTypeSize(input.dtype()) > 0) {  // not strings or variants
    p_.outputs[i].tensor = std::move(input);
    *out = &p_.outputs[i].tensor;
    return Status::OK();
  }
  return allocate_output(i, shape, out);
}

bool OpKernelContext::forward_input_resized(int in, int i, const TensorShape& shape, Tensor** out) {
  Tensor& input = p_.inputs[in].tensor;
  if (p_.inputs[in].ref != nullptr || !input.BufferIsUnshared() || input.dtype() != p_.kernel->output_type(i) ||
      p_.kernel->input_memory_type(in) != p_.kernel->output_memory_type(i)) {
    return false;
  }
  StatusOr<Tensor> resized = input.Resized(shape);
  if (!resized.ok()) return false;
  p_.outputs[i].tensor = *std::move(resized);
  input = Tensor();
  *out = &p_.outputs[i].tensor;
  return true;
}

Status OpKernelContext::allocate_temp(DataType dtype, const TensorShape& shape, Tensor* out,
                                      AllocatorAttributes attr) {
  ASSIGN_OR_RETURN(*out, Tensor::Allocate(p_.device->GetAllocator(attr), dtype, shape, p_.device->name()));
  return Status::OK();
}

}  // namespace tessera
