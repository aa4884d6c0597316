// Allocator: where tensor memory comes from, with per-allocator accounting.
//
// Each device owns a TrackingAllocator over the process-wide aligned CPU allocator, so
// "how many bytes does CPU:2 hold" is answerable per device. Allocators are shared_ptr-owned
// because a tensor keeps its allocator alive: a tensor fetched from a session may outlive
// the session and its devices.
//
// All methods are thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tessera {

struct AllocatorStats {
  int64_t num_allocs = 0;
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
};

class Allocator {
 public:
  // Alignment of every buffer handed out: enough for AVX-512 loads.
  static constexpr size_t kAlignment = 64;

  virtual ~Allocator() = default;
  virtual std::string_view name() const = 0;
  // Returns nullptr when out of memory. bytes may be 0.
  virtual void* AllocateRaw(size_t bytes) = 0;
  // `bytes` must be what was passed to AllocateRaw for `ptr`.
  virtual void DeallocateRaw(void* ptr, size_t bytes) = 0;
  virtual AllocatorStats stats() const { return {}; }
  // A note for an out-of-memory message: the limit the allocator keeps, if it keeps one.
  virtual std::string DescribeLimit() const { return {}; }
};

// A limit on the bytes several allocators hold together: a session's host memory. Each
// allocation is charged its size rounded up to the alignment plus kOverheadBytes for the
// objects that hold a tensor (its buffer, shape, and place in a container), so that a
// million scalars count for what they cost rather than for 8 bytes each.
class MemoryBudget {
 public:
  static constexpr int64_t kOverheadBytes = 256;

  explicit MemoryBudget(int64_t limit_bytes) : limit_(limit_bytes) {}
  int64_t limit() const { return limit_; }
  int64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  // What an allocation of `bytes` is charged.
  static int64_t Charge(size_t bytes);
  // Charges `charge`, or returns false and charges nothing when the limit would be passed.
  bool TryReserve(int64_t charge);
  void Release(int64_t charge) { in_use_.fetch_sub(charge, std::memory_order_relaxed); }

 private:
  const int64_t limit_;
  std::atomic<int64_t> in_use_{0};
};

// The memory this process may use: the machine's, or its cgroup's limit when lower.
int64_t HostMemoryBytes();

// The process-wide aligned host allocator. Never destroyed.
std::shared_ptr<Allocator> CpuAllocator();

// Host memory GPUs copy from and to directly (pinned), for tensors headed to a GPU:
// registered by the first GPU device a process makes; nullptr until then. Thread-safe.
std::shared_ptr<Allocator> GpuCompatibleHostAllocator();
void RegisterGpuCompatibleHostAllocator(std::shared_ptr<Allocator> allocator);

// Counts what passes through to `base` (allocations, bytes in use, peak), and refuses what
// would pass `budget` (shared with other allocators) when one is given.
class TrackingAllocator final : public Allocator {
 public:
  TrackingAllocator(std::string name, std::shared_ptr<Allocator> base, std::shared_ptr<MemoryBudget> budget = nullptr);
  std::string_view name() const override { return name_; }
  void* AllocateRaw(size_t bytes) override;
  void DeallocateRaw(void* ptr, size_t bytes) override;
  AllocatorStats stats() const override;
  std::string DescribeLimit() const override;

 private:
  const std::string name_;
  const std::shared_ptr<Allocator> base_;
  const std::shared_ptr<MemoryBudget> budget_;
  std::atomic<int64_t> num_allocs_{0};
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> peak_bytes_{0};
};

}  // namespace tessera
