#include "devices/bfc_allocator.h"

#include <algorithm>
#include <bit>

#include "graph/platform/status.h"

namespace tessera {
namespace {

size_t RoundUp(size_t bytes) {
  const size_t n = std::max<size_t>(bytes, 1);
  return (n + BFCAllocator::kMinAllocationBytes - 1) / BFCAllocator::kMinAllocationBytes *
         BFCAllocator::kMinAllocationBytes;
}

std::string Mib(size_t bytes) { return StrCat(bytes >> 20, " MiB"); }

}  // namespace

BFCAllocator::BFCAllocator(std::unique_ptr<SubAllocator> sub_allocator, Options options)
    : sub_allocator_(std::move(sub_allocator)), options_(std::move(options)) {}

BFCAllocator::~BFCAllocator() {
  for (const Region& r : regions_) sub_allocator_->Free(r.ptr, r.size);
}

int BFCAllocator::BinFor(size_t size) {
  const int bin = std::bit_width(size / kMinAllocationBytes) - 1;
  return std::min(std::max(bin, 0), kNumBins - 1);
}

BFCAllocator::ChunkId BFCAllocator::NewChunk() {
  if (!unused_ids_.empty()) {
    ChunkId id = unused_ids_.back();
    unused_ids_.pop_back();
    chunks_[id] = Chunk();
    return id;
  }
  chunks_.emplace_back();
  return static_cast<ChunkId>(chunks_.size() - 1);
}

void BFCAllocator::InsertFree(ChunkId id) {
  const Chunk& c = chunks_[id];
  bins_[BinFor(c.size)].insert({c.size, c.ptr, id});
}

void BFCAllocator::RemoveFree(ChunkId id) {
  const Chunk& c = chunks_[id];
  bins_[BinFor(c.size)].erase({c.size, c.ptr, id});
}

BFCAllocator::ChunkId BFCAllocator::FindFree(size_t rounded) {
  // The bins below `rounded`'s hold only smaller chunks; from its own up, the first chunk
  // not smaller than the request is the best fit.
  for (int bin = BinFor(rounded); bin < kNumBins; ++bin) {
    auto it = bins_[bin].lower_bound({rounded, nullptr, kNone});
    if (it != bins_[bin].end()) return it->id;
  }
  return kNone;
}

bool BFCAllocator::Extend(size_t rounded) {
  const size_t available = options_.memory_limit - region_bytes_;
  if (available < rounded) return false;
  size_t bytes = options_.allow_growth ? std::max(rounded, next_region_bytes_) : available;
  bytes = std::min(RoundUp(bytes), available / kMinAllocationBytes * kMinAllocationBytes);
  void* ptr = sub_allocator_->Alloc(bytes);
  // The driver may have less than the limit promised: try what the request needs.
  if (ptr == nullptr && bytes > rounded) {
    bytes = rounded;
    ptr = sub_allocator_->Alloc(bytes);
  }
  if (ptr == nullptr) return false;
  if (options_.allow_growth) next_region_bytes_ = std::max(next_region_bytes_, bytes) * 2;
  regions_.push_back({static_cast<char*>(ptr), bytes});
  region_bytes_ += bytes;
  ChunkId id = NewChunk();
  chunks_[id].ptr = static_cast<char*>(ptr);
  chunks_[id].size = bytes;
  InsertFree(id);
  return true;
}

void* BFCAllocator::AllocateRaw(size_t bytes) {
  if (bytes > options_.memory_limit) return nullptr;
  const size_t rounded = RoundUp(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  ChunkId id = FindFree(rounded);
  if (id == kNone) {
    if (!Extend(rounded)) return nullptr;
    id = FindFree(rounded);
  }
  RemoveFree(id);
  // Split when the rest is at least as big as what was asked: smaller leftovers stay with
  // the chunk rather than fragment the region.
  if (chunks_[id].size - rounded >= rounded) {
    ChunkId rest = NewChunk();  // may move chunks_: index, never hold references
    chunks_[rest].ptr = chunks_[id].ptr + rounded;
    chunks_[rest].size = chunks_[id].size - rounded;
    chunks_[rest].prev = id;
    chunks_[rest].next = chunks_[id].next;
    if (chunks_[id].next != kNone) chunks_[chunks_[id].next].prev = rest;
    chunks_[id].next = rest;
    chunks_[id].size = rounded;
    InsertFree(rest);
  }
  Chunk& c = chunks_[id];
  c.in_use = true;
  in_use_.emplace(c.ptr, id);
  ++stats_.num_allocs;
  stats_.bytes_in_use += static_cast<int64_t>(c.size);
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return c.ptr;
}

void BFCAllocator::Merge(ChunkId into, ChunkId absorbed) {
  Chunk& a = chunks_[into];
  const Chunk b = chunks_[absorbed];
  a.size += b.size;
  a.next = b.next;
  if (b.next != kNone) chunks_[b.next].prev = into;
  unused_ids_.push_back(absorbed);
}

void BFCAllocator::DeallocateRaw(void* ptr, size_t) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_use_.find(ptr);
  if (it == in_use_.end()) return;
  ChunkId id = it->second;
  in_use_.erase(it);
  chunks_[id].in_use = false;
  stats_.bytes_in_use -= static_cast<int64_t>(chunks_[id].size);
  const ChunkId next = chunks_[id].next;
  if (next != kNone && !chunks_[next].in_use) {
    RemoveFree(next);
    Merge(id, next);
  }
  const ChunkId prev = chunks_[id].prev;
  if (prev != kNone && !chunks_[prev].in_use) {
    RemoveFree(prev);
    Merge(prev, id);
    id = prev;
  }
  InsertFree(id);
}

size_t BFCAllocator::LargestFreeChunk() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (int bin = kNumBins - 1; bin >= 0; --bin) {
    if (!bins_[bin].empty()) return bins_[bin].rbegin()->size;
  }
  return 0;
}

size_t BFCAllocator::RegionBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return region_bytes_;
}

AllocatorStats BFCAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string BFCAllocator::DescribeLimit() const {
  const AllocatorStats s = stats();
  return StrCat(options_.name, " holds ", Mib(static_cast<size_t>(s.bytes_in_use)), " in use (peak ",
                Mib(static_cast<size_t>(s.peak_bytes_in_use)), ") of a limit of ", Mib(options_.memory_limit),
                "; its largest free chunk is ", LargestFreeChunk(), " bytes");
}

}  // namespace tessera
