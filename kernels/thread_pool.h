// ThreadPool: a fixed set of threads running closures (Eigen's non-blocking work-stealing
// pool underneath), with a parallel-for for kernels' inner loops.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<ThreadPool> pool, ThreadPool::Create("intra_op", 4));
//   pool->ParallelFor(n, /*cost_per_unit=*/10, [&](int64_t begin, int64_t end) { ... });
//
// Schedule and ParallelFor may be called concurrently from any thread, including the
// pool's own; there ParallelFor runs the whole loop on the caller, since a pool thread
// waiting on its own pool could leave none to do the work. The destructor waits for every
// scheduled closure to finish.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "graph/platform/status.h"

namespace Eigen {
class ThreadPoolDevice;
}

namespace tessera {

class ThreadPool {
 public:
  // InvalidArgument for fewer than one thread; ResourceExhausted when the system refuses
  // to start them all (a process's thread or memory limit).
  static StatusOr<std::unique_ptr<ThreadPool>> Create(std::string name, int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(std::function<void()> fn);
  int NumThreads() const;
  // 0..NumThreads()-1 on a thread of this pool, -1 elsewhere.
  int CurrentThreadId() const;
  const std::string& name() const { return name_; }

  // Splits [0, total) into blocks sized by `cost_per_unit` (estimated cycles per element)
  // and runs fn on them, on the calling thread and up to NumThreads() - 1 of this pool's
  // (NumThreads() threads in all); returns when all are done. The caller takes blocks as
  // long as any are left, so it never waits for a pool thread to wake or to free up. A
  // helper lingers briefly after its loop, and a loop begun meanwhile claims it, so a step's
  // loops in quick succession do not each wait for a thread to wake.
  void ParallelFor(int64_t total, int64_t cost_per_unit,
                   const std::function<void(int64_t, int64_t)>& fn);

  // For Eigen Tensor expressions (contractions) that run on this pool: evaluate them with
  // AssignOnPool (kernels/util/eigen_tensor.h), which keeps the rule above.
  const Eigen::ThreadPoolDevice& eigen_device() const;

 private:
  ThreadPool(std::string name, int num_threads);
  struct Impl;
  std::string name_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
