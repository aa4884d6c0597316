#define EIGEN_USE_THREADS
#include "kernels/thread_pool.h"

#include <unsupported/Eigen/CXX11/Tensor>
#include <unsupported/Eigen/CXX11/ThreadPool>

namespace tessera {

struct ThreadPool::Impl {
  explicit Impl(int n) : pool(n), device(&pool, n) {}
  Eigen::ThreadPool pool;
  Eigen::ThreadPoolDevice device;
};

ThreadPool::ThreadPool(std::string name, int num_threads)
    : name_(std::move(name)), impl_(std::make_unique<Impl>(num_threads)) {}

ThreadPool::~ThreadPool() = default;

void ThreadPool::Schedule(std::function<void()> fn) { impl_->pool.Schedule(std::move(fn)); }
int ThreadPool::NumThreads() const { return impl_->pool.NumThreads(); }
int ThreadPool::CurrentThreadId() const { return impl_->pool.CurrentThreadId(); }

void ThreadPool::ParallelFor(int64_t total, int64_t cost_per_unit,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (total <= 0) return;
  // Below ~10k cycles of work a hop to another thread costs more than it saves. On one of
  // this pool's own threads (a kernel continued inline by an async op's completion there)
  // waiting on the pool could deadlock it, so the loop runs right here.
  if (total * cost_per_unit < 10000 || NumThreads() == 1 || CurrentThreadId() >= 0) {
    fn(0, total);
    return;
  }
  impl_->device.parallelFor(static_cast<Eigen::Index>(total),
                            Eigen::TensorOpCost(0, 0, static_cast<double>(cost_per_unit)),
                            [&fn](Eigen::Index b, Eigen::Index e) { fn(b, e); });
}

const Eigen::ThreadPoolDevice& ThreadPool::eigen_device() const { return impl_->device; }

}  // namespace tessera
