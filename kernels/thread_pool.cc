#define EIGEN_USE_THREADS
#include "kernels/thread_pool.h"

#include <unsupported/Eigen/CXX11/Tensor>
#include <unsupported/Eigen/CXX11/ThreadPool>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
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
  std::atomic<int>* running = nullptr;  // workers started and not yet returned

  EnvThread* CreateThread(std::function<void()> f) {
    try {
      running->fetch_add(1);
      return new EnvThread(std::thread([f = std::move(f), running = running] {
        f();
        running->fetch_sub(1);
      }));
    } catch (const std::system_error&) {
      running->fetch_sub(1);
      refused->store(true);
      return new EnvThread(std::thread());
    }
  }
  Task CreateTask(std::function<void()> f) { return Task{std::move(f)}; }
  void ExecuteTask(const Task& t) { t.f(); }
};

// A ParallelFor's blocks, taken one at a time by its caller and the helpers it schedules.
// Helpers hold it by shared_ptr, so one that starts after the caller has returned (every
// block already done) finds no block left and touches nothing of the caller's.
struct SharedLoop {
  SharedLoop(const std::function<void(int64_t, int64_t)>& fn, int64_t total, int64_t blocks)
      : fn(fn), total(total), block_size((total + blocks - 1) / blocks), blocks((total + block_size - 1) / block_size) {}

  // Runs blocks until none is left.
  void Work() {
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < blocks;) {
      fn(i * block_size, std::min(total, (i + 1) * block_size));
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == blocks) done.notify_all();
    }
  }

  // Until every block is done: a short spin first, since the last block, on another thread,
  // is usually moments from its end and a sleep costs a wake-up of tens of microseconds.
  void Wait() {
    for (int spin = 0; spin < 2000 && done.load(std::memory_order_acquire) < blocks; ++spin) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#else
      std::this_thread::yield();
#endif
    }
    for (int64_t d; (d = done.load(std::memory_order_acquire)) < blocks;) done.wait(d, std::memory_order_acquire);
  }

  const std::function<void(int64_t, int64_t)>& fn;
  const int64_t total, block_size, blocks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
};

}  // namespace

struct ThreadPool::Impl {
  // Idle workers sleep at once rather than spin: where a step's threads fill the cores, a
  // spinning worker takes one from a thread with work (the demo CNN's training step at two
  // threads on two cores: 8.4 ms against 8.8 with spinning).
  explicit Impl(int n)
      : pool(n, /*allow_spinning=*/false, CheckedThreadEnvironment{&refused, &running}), device(&pool, n) {}

  // A helper's share of `loop`, then of the loops handed to it while it lingers (Linger).
  void Help(std::shared_ptr<SharedLoop> loop) {
    while (loop != nullptr) {
      loop->Work();
      loop = Linger();
    }
  }

  // Waits up to kLinger for a loop to be handed over: an idle Eigen worker sleeps and takes
  // 25-45 us to wake (measured on a 2-vCPU VM), longer than many of a step's loops take;
  // and a CNN's single-image convolutions, each cut across the threads, come one after
  // another with a few that are not cut between them (50-300 us: MobileNetV2 at batch 1 and
  // two threads ran 9.1 ms with 100 us of lingering, 8.1 with 1 ms, medians of 8 runs).
  // Yielding, so that a busier thread on the core runs.
  // A loop claims lingering helpers one by one (Claim) and queues itself once for each, so
  // loops begun at once from several threads (concurrent kernels, an input pipeline beside
  // the step) each get the helpers they counted on. A helper whose time is up leaves only
  // if it can take itself off the count; if a loop claimed it meanwhile, it waits for it.
  std::shared_ptr<SharedLoop> Linger() {
    constexpr auto kLinger = std::chrono::microseconds(1000);
    // No more helpers linger than one loop can claim (NumThreads() - 1): after two loops at
    // once (kernels of parallel branches), the second lingerer only took a core from threads
    // with work. EfficientNetB0 at batch 1 on two threads ran ~10.4 ms instead of ~7.4 in a
    // fourth of its processes so (3 of 12), in none of 24 capped.
    for (int64_t n = lingering.load(std::memory_order_acquire);;) {
      if (n >= pool.NumThreads() - 1) return nullptr;
      if (lingering.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel)) break;
    }
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      if (queued.load(std::memory_order_acquire) > 0) {
        std::lock_guard<std::mutex> lock(handed_mu);
        if (!handed.empty()) {
          std::shared_ptr<SharedLoop> loop = std::move(handed.front());
          handed.pop_front();
          queued.fetch_sub(1, std::memory_order_acq_rel);
          return loop;
        }
      }
      if (std::chrono::steady_clock::now() - start > kLinger && Claim(1) == 1) return nullptr;
      std::this_thread::yield();
    }
  }

  // Takes up to `want` helpers off the lingering count; returns how many it took.
  int64_t Claim(int64_t want) {
    int64_t n = lingering.load(std::memory_order_acquire);
    while (n > 0 && !lingering.compare_exchange_weak(n, n - std::min(n, want), std::memory_order_acq_rel)) {
    }
    return std::min(n, want);
  }

  // Before the pool, which writes them while it is built.
  std::atomic<bool> refused{false};
  std::atomic<int> running{0};
  // Before the pool, whose destructor waits for the helpers that read them.
  std::mutex handed_mu;
  std::deque<std::shared_ptr<SharedLoop>> handed;  // guarded by handed_mu: loops for claimed helpers
  std::atomic<int64_t> queued{0};                  // handed.size(), read without the lock
  std::atomic<int64_t> lingering{0};               // lingering helpers no loop has claimed
  Eigen::ThreadPoolTempl<CheckedThreadEnvironment> pool;
  Eigen::ThreadPoolDevice device;
};

ThreadPool::ThreadPool(std::string name, int num_threads)
    : name_(std::move(name)), impl_(std::make_unique<Impl>(num_threads)) {}

StatusOr<std::unique_ptr<ThreadPool>> ThreadPool::Create(std::string name, int num_threads) {
  if (num_threads < 1) return errors::InvalidArgument("The ", name, " pool needs at least one thread, got ", num_threads);
  std::unique_ptr<ThreadPool> pool(new ThreadPool(std::move(name), num_threads));
  if (pool->impl_->refused.load()) {
    // Workers leave an Eigen pool once all are idle, which the missing ones never are, so
    // the pool is cancelled. Cancel wakes only the workers already asleep: one between its
    // last look at the flag and its sleep would sleep for ever (a hang seen in CI under
    // load), so the wake is repeated until every worker has returned.
    while (pool->impl_->running.load() > 0) {
      pool->impl_->pool.Cancel();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
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
  constexpr double kMinBlockCost = 10000;
  const double cost = static_cast<double>(total) * static_cast<double>(std::max<int64_t>(cost_per_unit, 1));
  if (cost < kMinBlockCost || NumThreads() == 1 || CurrentThreadId() >= 0) {
    fn(0, total);
    return;
  }
  // Up to four blocks a thread, so that a thread slowed by another process hands its share
  // on, none under kMinBlockCost. The caller works too, beside NumThreads() - 1 helpers:
  // NumThreads() threads in all, as many as the pool was sized for.
  const int64_t blocks = std::clamp<int64_t>(static_cast<int64_t>(cost / kMinBlockCost), 1,
                                             std::min<int64_t>(total, 4 * int64_t{NumThreads()}));
  Impl& impl = *impl_;
  auto loop = std::make_shared<SharedLoop>(fn, total, blocks);
  // Lingering helpers are claimed and handed the loop; the rest are woken.
  const int64_t helpers = std::min<int64_t>(loop->blocks - 1, NumThreads() - 1);
  const int64_t claimed = impl.Claim(helpers);
  if (claimed > 0) {
    std::lock_guard<std::mutex> lock(impl.handed_mu);
    for (int64_t h = 0; h < claimed; ++h) impl.handed.push_back(loop);
    impl.queued.fetch_add(claimed, std::memory_order_acq_rel);
  }
  for (int64_t h = claimed; h < helpers; ++h) Schedule([&impl, loop] { impl.Help(loop); });
  loop->Work();
  loop->Wait();
}

const Eigen::ThreadPoolDevice& ThreadPool::eigen_device() const { return impl_->device; }

}  // namespace tessera
