// The best-fit allocator's logic, on host memory through a fake SubAllocator: the GPU
// device uses the same code over cudaMalloc.
#include "devices/bfc_allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

namespace tessera {
namespace {

// Host memory, counted, with room for at most `capacity` bytes in all.
class FakeSubAllocator final : public SubAllocator {
 public:
  explicit FakeSubAllocator(size_t capacity, int* regions) : capacity_(capacity), regions_(regions) {}
  void* Alloc(size_t bytes) override {
    if (used_ + bytes > capacity_) return nullptr;
    used_ += bytes;
    ++*regions_;
    return std::aligned_alloc(256, bytes);
  }
  void Free(void* ptr, size_t bytes) override {
    used_ -= bytes;
    std::free(ptr);
  }

 private:
  const size_t capacity_;
  size_t used_ = 0;
  int* regions_;
};

struct Fixture {
  explicit Fixture(size_t limit, bool growth, size_t capacity = size_t{1} << 40)
      : allocator(std::make_unique<FakeSubAllocator>(capacity, &regions),
                  {.name = "fake_gpu", .memory_limit = limit, .allow_growth = growth}) {}
  int regions = 0;
  BFCAllocator allocator;
};

constexpr size_t kMiB = size_t{1} << 20;

TEST(BFCAllocatorTest, RoundsAlignsAndCounts) {
  Fixture f(16 * kMiB, false);
  char* a = static_cast<char*>(f.allocator.AllocateRaw(1));
  char* b = static_cast<char*>(f.allocator.AllocateRaw(300));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
  EXPECT_EQ(b - a, 256);  // one region, cut in address order
  EXPECT_EQ(f.regions, 1);
  EXPECT_EQ(f.allocator.RegionBytes(), 16 * kMiB);  // without growth: the whole limit at once
  AllocatorStats s = f.allocator.stats();
  EXPECT_EQ(s.num_allocs, 2);
  EXPECT_EQ(s.bytes_in_use, 256 + 512);
  f.allocator.DeallocateRaw(a, 1);
  f.allocator.DeallocateRaw(b, 300);
  EXPECT_EQ(f.allocator.stats().bytes_in_use, 0);
  EXPECT_EQ(f.allocator.stats().peak_bytes_in_use, 768);
  EXPECT_EQ(f.allocator.LargestFreeChunk(), 16 * kMiB);  // merged back whole
}

TEST(BFCAllocatorTest, FreedNeighboursCoalesce) {
  Fixture f(4 * kMiB, false);
  void* a = f.allocator.AllocateRaw(kMiB);
  void* b = f.allocator.AllocateRaw(kMiB);
  void* c = f.allocator.AllocateRaw(kMiB);
  ASSERT_TRUE(a && b && c);
  f.allocator.DeallocateRaw(b, kMiB);
  f.allocator.DeallocateRaw(a, kMiB);
  // a and b are one free chunk again: two MiB at a's address, with no new region.
  void* ab = f.allocator.AllocateRaw(2 * kMiB);
  EXPECT_EQ(ab, a);
  EXPECT_EQ(f.regions, 1);
  f.allocator.DeallocateRaw(ab, 2 * kMiB);
  f.allocator.DeallocateRaw(c, kMiB);
  EXPECT_EQ(f.allocator.LargestFreeChunk(), 4 * kMiB);
}

TEST(BFCAllocatorTest, TakesTheSmallestChunkThatFits) {
  Fixture f(4 * kMiB, false);
  void* small = f.allocator.AllocateRaw(1024);
  void* guard1 = f.allocator.AllocateRaw(256);
  void* large = f.allocator.AllocateRaw(4096);
  void* guard2 = f.allocator.AllocateRaw(256);
  f.allocator.DeallocateRaw(small, 1024);
  f.allocator.DeallocateRaw(large, 4096);
  EXPECT_EQ(f.allocator.AllocateRaw(1000), small);
  EXPECT_EQ(f.allocator.AllocateRaw(4000), large);
  f.allocator.DeallocateRaw(guard1, 256);
  f.allocator.DeallocateRaw(guard2, 256);
}

TEST(BFCAllocatorTest, FragmentationNeedsANewRegionOrFails) {
  Fixture grows(64 * kMiB, true);
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(grows.allocator.AllocateRaw(256 * 1024));  // the 2 MiB region
  EXPECT_EQ(grows.regions, 1);
  for (int i = 0; i < 8; i += 2) grows.allocator.DeallocateRaw(blocks[i], 256 * 1024);
  // 1 MiB is free, but in pieces of 256 KiB: a 512 KiB request takes a second region.
  EXPECT_EQ(grows.allocator.LargestFreeChunk(), 256 * 1024u);
  EXPECT_NE(grows.allocator.AllocateRaw(512 * 1024), nullptr);
  EXPECT_EQ(grows.regions, 2);
  EXPECT_EQ(grows.allocator.RegionBytes(), 2 * kMiB + 4 * kMiB);  // regions double

  Fixture fixed(2 * kMiB, false);
  std::vector<void*> held;
  for (int i = 0; i < 8; ++i) held.push_back(fixed.allocator.AllocateRaw(256 * 1024));
  for (int i = 0; i < 8; i += 2) fixed.allocator.DeallocateRaw(held[i], 256 * 1024);
  EXPECT_EQ(fixed.allocator.AllocateRaw(512 * 1024), nullptr);
  const std::string why = fixed.allocator.DescribeLimit();
  EXPECT_NE(why.find("1 MiB in use"), std::string::npos) << why;
  EXPECT_NE(why.find("largest free chunk is 262144 bytes"), std::string::npos) << why;
}

TEST(BFCAllocatorTest, NeverPassesItsLimit) {
  Fixture f(3 * kMiB, true);
  EXPECT_EQ(f.allocator.AllocateRaw(4 * kMiB), nullptr);
  void* a = f.allocator.AllocateRaw(2 * kMiB);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(f.allocator.AllocateRaw(2 * kMiB), nullptr);  // only 1 MiB of the limit is left
  EXPECT_NE(f.allocator.AllocateRaw(kMiB), nullptr);
  EXPECT_LE(f.allocator.RegionBytes(), 3 * kMiB);
  f.allocator.DeallocateRaw(a, 2 * kMiB);
  EXPECT_NE(f.allocator.AllocateRaw(2 * kMiB), nullptr);  // reused, not allocated again
}

TEST(BFCAllocatorTest, ADriverWithLessThanTheLimitStillServesWhatFits) {
  Fixture f(64 * kMiB, false, 8 * kMiB);  // the limit says 64, the device has 8
  void* a = f.allocator.AllocateRaw(4 * kMiB);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(f.allocator.RegionBytes(), 4 * kMiB);
  EXPECT_EQ(f.allocator.AllocateRaw(6 * kMiB), nullptr);
  f.allocator.DeallocateRaw(a, 4 * kMiB);
}

TEST(BFCAllocatorTest, ConcurrentAllocationsNeverOverlap) {
  Fixture f(256 * kMiB, true);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&f, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<unsigned char*, size_t>> held;
      for (int i = 0; i < 5000; ++i) {
        if (held.empty() || rng() % 3 != 0) {
          const size_t bytes = 1 + rng() % 20000;
          auto* p = static_cast<unsigned char*>(f.allocator.AllocateRaw(bytes));
          ASSERT_NE(p, nullptr);
          std::memset(p, t + 1, bytes);
          held.emplace_back(p, bytes);
        } else {
          auto [p, bytes] = held[rng() % held.size()];
          for (size_t k = 0; k < bytes; k += 97) ASSERT_EQ(p[k], t + 1) << "another thread wrote here";
          f.allocator.DeallocateRaw(p, bytes);
          std::erase(held, std::make_pair(p, bytes));
        }
      }
      for (auto [p, bytes] : held) f.allocator.DeallocateRaw(p, bytes);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(f.allocator.stats().bytes_in_use, 0);
}

}  // namespace
}  // namespace tessera
