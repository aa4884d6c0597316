// BFCAllocator: best-fit with coalescing over a few large regions, the allocator TensorFlow
// gives each GPU. A region comes from a SubAllocator (cudaMalloc for a GPU) and is cut into
// chunks; a request takes the smallest free chunk that fits, split when the rest is worth
// keeping, and a freed chunk merges with free neighbours of its region, so a step that
// allocates what the last one freed never goes back to the driver.
//
//   BFCAllocator::Options options;
//   options.memory_limit = 8 << 30;   // what it may take from the SubAllocator
//   options.allow_growth = true;      // regions on demand, doubling; else one region
//   auto gpu_memory = std::make_shared<BFCAllocator>(std::move(sub_allocator), options);
//
// Sizes round up to 256 bytes. Free chunks live in 21 bins by size (256 B << i), each
// sorted by size then address. AllocateRaw returns nullptr when the limit leaves no chunk
// big enough; DescribeLimit then says what is in use, the peak and the largest free chunk,
// for the OOM message. All methods are thread-safe (one mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/allocator.h"

namespace tessera {

// Where a BFCAllocator's regions come from.
class SubAllocator {
 public:
  virtual ~SubAllocator() = default;
  // nullptr when the memory is not there.
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
};

class BFCAllocator final : public Allocator {
 public:
  struct Options {
    std::string name = "bfc";
    size_t memory_limit = 0;
    // Regions on demand, starting at 2 MiB and doubling; otherwise the whole limit is one
    // region, taken at the first allocation (TensorFlow's default).
    bool allow_growth = false;
  };

  static constexpr size_t kMinAllocationBytes = 256;

  BFCAllocator(std::unique_ptr<SubAllocator> sub_allocator, Options options);
  ~BFCAllocator() override;

  std::string_view name() const override { return options_.name; }
  void* AllocateRaw(size_t bytes) override;
  void DeallocateRaw(void* ptr, size_t bytes) override;
  AllocatorStats stats() const override;
  std::string DescribeLimit() const override;

  // The largest chunk a request could get now without a new region.
  size_t LargestFreeChunk() const;
  // Bytes taken from the SubAllocator so far.
  size_t RegionBytes() const;

 private:
  static constexpr int kNumBins = 21;
  using ChunkId = int;
  static constexpr ChunkId kNone = -1;

  struct Chunk {
    char* ptr = nullptr;
    size_t size = 0;
    bool in_use = false;
    ChunkId prev = kNone;  // neighbours in address order within one region
    ChunkId next = kNone;
  };
  // A free chunk in its bin: ordered by size, then address.
  struct FreeKey {
    size_t size;
    const char* ptr;
    ChunkId id;
    bool operator<(const FreeKey& o) const { return size != o.size ? size < o.size : ptr < o.ptr; }
  };
  struct Region {
    char* ptr;
    size_t size;
  };

  static int BinFor(size_t size);
  ChunkId NewChunk();
  void InsertFree(ChunkId id);
  void RemoveFree(ChunkId id);
  ChunkId FindFree(size_t rounded);
  bool Extend(size_t rounded);
  void Merge(ChunkId into, ChunkId absorbed);

  const std::unique_ptr<SubAllocator> sub_allocator_;
  const Options options_;

  mutable std::mutex mu_;
  std::vector<Chunk> chunks_;                        // guarded by mu_
  std::vector<ChunkId> unused_ids_;                  // guarded by mu_
  std::set<FreeKey> bins_[kNumBins];                 // guarded by mu_
  std::unordered_map<void*, ChunkId> in_use_;        // by pointer; guarded by mu_
  std::vector<Region> regions_;                      // guarded by mu_
  size_t region_bytes_ = 0;                          // guarded by mu_
  size_t next_region_bytes_ = size_t{2} << 20;       // guarded by mu_
  AllocatorStats stats_;                             // guarded by mu_
};

}  // namespace tessera
