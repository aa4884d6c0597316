#include "graph/allocator.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <list>
#include <mutex>
#include <new>

#include "graph/platform/status.h"

#ifndef TESSERA_LIBC_MALLOC
#include <oneapi/tbb/scalable_allocator.h>
#endif

namespace tessera {
namespace {

class AlignedCpuAllocator final : public Allocator {
 public:
  std::string_view name() const override { return "cpu"; }
#ifdef TESSERA_LIBC_MALLOC
  // Sanitizer builds: libc's allocator, which AddressSanitizer watches.
  void* AllocateRaw(size_t bytes) override {
    // aligned_alloc needs a size that is a multiple of the alignment.
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    return std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  }
  void DeallocateRaw(void* ptr, size_t) override { std::free(ptr); }
#else
  // Blocks of 1 MiB and more - a step's activations - are kept when freed and handed out
  // again for the same size (to 64 KiB): oneTBB gave the largest of them back to the kernel
  // on every free, and faulting their pages in again took a tenth of an inference step.
  // What is kept is bounded (kept_limit_); the oldest goes back first.
  void* AllocateRaw(size_t bytes) override {
    if (bytes < kCachedFrom) return scalable_aligned_malloc(bytes == 0 ? 1 : bytes, kAlignment);
    const size_t size = CachedSize(bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
        if (it->size != size) continue;
        void* ptr = it->ptr;
        kept_bytes_ -= size;
        kept_.erase(std::next(it).base());
        return ptr;
      }
    }
    void* ptr = scalable_aligned_malloc(size, kAlignment);
    if (ptr == nullptr && ReleaseKept(0)) ptr = scalable_aligned_malloc(size, kAlignment);
    return ptr;
  }
  void DeallocateRaw(void* ptr, size_t bytes) override {
    if (bytes < kCachedFrom) return scalable_aligned_free(ptr);
    std::lock_guard<std::mutex> lock(mu_);
    kept_.push_back({CachedSize(bytes), ptr});
    kept_bytes_ += kept_.back().size;
    ReleaseKeptLocked(kept_limit_);
  }

 private:
  static constexpr size_t kCachedFrom = size_t{1} << 20;
  static size_t CachedSize(size_t bytes) { return (bytes + 0xffff) & ~size_t{0xffff}; }
  struct Block {
    size_t size;
    void* ptr;
  };
  // Frees kept blocks, oldest first, until at most `limit` bytes are kept; whether any was.
  bool ReleaseKept(size_t limit) {
    std::lock_guard<std::mutex> lock(mu_);
    return ReleaseKeptLocked(limit);
  }
  bool ReleaseKeptLocked(size_t limit) {
    bool released = false;
    while (kept_bytes_ > limit) {
      scalable_aligned_free(kept_.front().ptr);
      kept_bytes_ -= kept_.front().size;
      kept_.pop_front();
      released = true;
    }
    return released;
  }
  std::mutex mu_;
  std::list<Block> kept_;  // in the order they were freed
  size_t kept_bytes_ = 0;
  // A quarter of the memory the process may use: a step's activations at batch 32 (DenseNet's
  // reach 2 GiB) are all kept from one step to the next, as ONNX Runtime's arena keeps them.
  const size_t kept_limit_ = static_cast<size_t>(HostMemoryBytes() / 4);
#endif
};

}  // namespace

std::shared_ptr<Allocator> CpuAllocator() {
  static auto* allocator = new std::shared_ptr<Allocator>(std::make_shared<AlignedCpuAllocator>());
  return *allocator;
}

namespace {

std::mutex gpu_compatible_mu;
std::shared_ptr<Allocator>* gpu_compatible = nullptr;  // guarded by gpu_compatible_mu; never destroyed

}  // namespace

std::shared_ptr<Allocator> GpuCompatibleHostAllocator() {
  std::lock_guard<std::mutex> lock(gpu_compatible_mu);
  return gpu_compatible != nullptr ? *gpu_compatible : nullptr;
}

void RegisterGpuCompatibleHostAllocator(std::shared_ptr<Allocator> allocator) {
  std::lock_guard<std::mutex> lock(gpu_compatible_mu);
  if (gpu_compatible == nullptr) gpu_compatible = new std::shared_ptr<Allocator>(std::move(allocator));
}

int64_t MemoryBudget::Charge(size_t bytes) {
  const size_t rounded = (bytes + Allocator::kAlignment - 1) / Allocator::kAlignment * Allocator::kAlignment;
  return static_cast<int64_t>(std::min<size_t>(rounded, size_t{1} << 62)) + kOverheadBytes;
}

bool MemoryBudget::TryReserve(int64_t charge) {
  int64_t used = in_use_.load(std::memory_order_relaxed);
  do {
    if (charge > limit_ - used) return false;
  } while (!in_use_.compare_exchange_weak(used, used + charge, std::memory_order_relaxed));
  return true;
}

int64_t HostMemoryBytes() {
  int64_t bytes = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE);
  // cgroup v2, then v1; "max" or a huge v1 value means no limit.
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    int64_t limit = 0;
    if (in >> limit && limit > 0) bytes = std::min(bytes, limit);
  }
  return bytes;
}

TrackingAllocator::TrackingAllocator(std::string name, std::shared_ptr<Allocator> base,
                                     std::shared_ptr<MemoryBudget> budget)
    : name_(std::move(name)), base_(std::move(base)), budget_(std::move(budget)) {}

void* TrackingAllocator::AllocateRaw(size_t bytes) {
  if (budget_ != nullptr && !budget_->TryReserve(MemoryBudget::Charge(bytes))) return nullptr;
  void* p = base_->AllocateRaw(bytes);
  if (p == nullptr) {
    if (budget_ != nullptr) budget_->Release(MemoryBudget::Charge(bytes));
    return nullptr;
  }
  num_allocs_.fetch_add(1, std::memory_order_relaxed);
  int64_t now = bytes_in_use_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed) +
                static_cast<int64_t>(bytes);
  int64_t peak = peak_bytes_.load(std::memory_order_relaxed);
  while (now > peak && !peak_bytes_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return p;
}

void TrackingAllocator::DeallocateRaw(void* ptr, size_t bytes) {
  bytes_in_use_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  base_->DeallocateRaw(ptr, bytes);
  if (budget_ != nullptr) budget_->Release(MemoryBudget::Charge(bytes));
}

std::string TrackingAllocator::DescribeLimit() const {
  if (budget_ == nullptr) return {};
  constexpr int64_t kMiB = int64_t{1} << 20;
  return StrCat("the session's host memory limit is ", budget_->limit() / kMiB, " MiB, of which ",
                budget_->in_use() / kMiB, " MiB are in use (host_memory_limit_mb)");
}

AllocatorStats TrackingAllocator::stats() const {
  return {num_allocs_.load(), bytes_in_use_.load(), peak_bytes_.load()};
}

}  // namespace tessera
