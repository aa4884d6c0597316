#define EIGEN_USE_THREADS
#include "kernels/thread_pool.h"

#include <unsupported/Eigen/CXX11/Tensor>
#include <unsupported/Eigen/CXX11/ThreadPool>

#include <atomic>
#include <system_error>
#include <thread>

namespace tessera {
namespace {

// Eigen's thread environment, except that a thread the system refuses to create is noted
// rather than thrown: an exception from the pool's constructor would leave the threads it
// had started waiting for work for ever, while the half-built pool joined them.
struct CheckedThreadEnvironment {
  using Task = Eigen::StlThreadEnvironment::Task;
  class EnvThread {
   public:
    explicit EnvThread(std::thread thread) : thread_(std::move(thread)) {}
    ~EnvThread() {
      if (thread_.joinable()) thread_.join();
    }
    void OnCancel() {}

   private:
    std::thread thread_;
  };

  std::atomic<bool>* refused = nullptr;

  EnvThread* CreateThread(std::function<void()> f) {
    try {
      return new EnvThread(std::thread(std::move(f)));
    } catch (const std::system_error&) {
      refused->store(true);
      return new EnvThread(std::thread());
    }
  }
  Task CreateTask(std::function<void()> f) { return Task{std::move(f)}; }
  void ExecuteTask(const Task& t) { t.f(); }
};

}  // namespace

struct ThreadPool::Impl {
  explicit Impl(int n) : pool(n, true, CheckedThreadEnvironment{&refused}), device(&pool, n) {}
  std::atomic<bool> refused{false};  // before the pool, which writes it while it is built
  Eigen::ThreadPoolTempl<CheckedThreadEnvironment> pool;
  Eigen::ThreadPoolDevice device;
};

ThreadPool::ThreadPool(std::string name, int num_threads)
    : name_(std::move(name)), impl_(std::make_unique<Impl>(num_threads)) {}

StatusOr<std::unique_ptr<ThreadPool>> ThreadPool::Create(std::string name, int num_threads) {
  if (num_threads < 1) return errors::InvalidArgument("The ", name, " pool needs at least one thread, got ", num_threads);
  std::unique_ptr<ThreadPool> pool(new ThreadPool(std::move(name), num_threads));
  if (pool->impl_->refused.load()) {
    // Workers leave an Eigen pool once all are idle, which the missing ones never are;
    // cancelled, they leave at once.
    pool->impl_->pool.Cancel();
    return errors::ResourceExhausted("Cannot start the ", num_threads, " threads of the ", pool->name_,
                                     " pool: the system refused to create more threads");
  }
  return pool;
}

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
