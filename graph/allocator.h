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
};

// The process-wide aligned host allocator. Never destroyed.
std::shared_ptr<Allocator> CpuAllocator();

// Counts what passes through to `base` (allocations, bytes in use, peak).
class TrackingAllocator final : public Allocator {
 public:
  TrackingAllocator(std::string name, std::shared_ptr<Allocator> base);
  std::string_view name() const override { return name_; }
  void* AllocateRaw(size_t bytes) override;
  void DeallocateRaw(void* ptr, size_t bytes) override;
  AllocatorStats stats() const override;

 private:
  const std::string name_;
  const std::shared_ptr<Allocator> base_;
  std::atomic<int64_t> num_allocs_{0};
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> peak_bytes_{0};
};

}  // namespace tessera
