// The table format of TensorFlow's checkpoint indexes: what the builder writes reads back, in
// one block or many, and every damaged table is a DataLoss (or Unimplemented) naming the
// file, never a crash or a wrong entry.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "graph/platform/crc32c.h"
#include "graph/serialize/sstable.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using Entries = std::vector<std::pair<std::string, std::string>>;

Entries MakeEntries(int n) {
  Entries e;
  for (int i = 0; i < n; ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "layer_%05d/kernel", i);
    e.emplace_back(key, std::string(static_cast<size_t>(i % 37), static_cast<char>('a' + i % 26)));
  }
  return e;
}

std::string Build(const Entries& entries, size_t block_size = size_t{256} << 10) {
  SstableBuilder b(block_size);
  for (const auto& [k, v] : entries) EXPECT_TRUE(b.Add(k, v).ok()) << k;
  return b.Finish();
}

TEST(Crc32cTest, MatchesTheStandardCheckValueAndExtends) {
  EXPECT_EQ(crc32c::Value("123456789", 9), 0xe3069283u);
  EXPECT_EQ(crc32c::Value("", 0), 0u);
  std::string long_text(1000, '\0');
  for (size_t i = 0; i < long_text.size(); ++i) long_text[i] = static_cast<char>(i * 7);
  for (size_t split : {0, 1, 7, 8, 9, 500, 1000}) {
    EXPECT_EQ(crc32c::Extend(crc32c::Value(long_text.data(), split), long_text.data() + split, 1000 - split),
              crc32c::Value(long_text.data(), 1000));
  }
  for (uint32_t c : {0u, 1u, 0xe3069283u, 0xffffffffu}) EXPECT_EQ(crc32c::Unmask(crc32c::Mask(c)), c);
  EXPECT_NE(crc32c::Mask(0xe3069283u), 0xe3069283u);
}

TEST(SstableTest, OneBlockAndManyBlocksReadBackInOrder) {
  for (size_t block_size : {size_t{256} << 10, size_t{64}}) {
    const Entries entries = MakeEntries(300);
    StatusOr<Entries> read = ReadSstable(Build(entries, block_size), "t.index");
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(*read, entries);
  }
}

TEST(SstableTest, AnEmptyTableAndAnEmptyKeyRoundTrip) {
  StatusOr<Entries> empty = ReadSstable(Build({}), "t.index");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->empty());
  const Entries header = {{"", "header"}, {"a", ""}};
  StatusOr<Entries> read = ReadSstable(Build(header), "t.index");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, header);
}

TEST(SstableTest, KeysMustIncrease) {
  SstableBuilder b;
  ASSERT_TRUE(b.Add("b", "1").ok());
  EXPECT_EQ(b.Add("b", "2").code(), Code::kInvalidArgument);
  EXPECT_EQ(b.Add("a", "2").code(), Code::kInvalidArgument);
}

TEST(SstableTest, EveryTruncationAndEveryFlippedBitIsAnErrorNamingTheFile) {
  const std::string good = Build(MakeEntries(40), 128);
  for (size_t n = 0; n < good.size(); ++n) {
    StatusOr<Entries> read = ReadSstable(std::string_view(good).substr(0, n), "t.index");
    ASSERT_FALSE(read.ok()) << "truncated to " << n;
    EXPECT_EQ(read.status().code(), Code::kDataLoss);
    EXPECT_THAT(std::string(read.status().message()), HasSubstr("'t.index'"));
  }
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit : {0, 7}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      StatusOr<Entries> read = ReadSstable(bad, "t.index");
      // The footer's padding is the only part no check covers; a flip there changes nothing.
      if (read.ok()) {
        EXPECT_EQ(*read, MakeEntries(40)) << "byte " << i;
        continue;
      }
      EXPECT_THAT(std::string(read.status().message()), HasSubstr("'t.index'")) << "byte " << i;
    }
  }
}

TEST(SstableTest, ErrorsNameTheByteOffset) {
  std::string bad = Build({{"a", "1"}, {"b", "2"}});
  bad[0] ^= 1;  // inside the only data block, which starts at 0
  StatusOr<Entries> read = ReadSstable(bad, "model.index");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Code::kDataLoss);
  EXPECT_THAT(std::string(read.status().message()), HasSubstr("block at byte offset 0 fails its checksum"));
  std::string no_magic = Build({{"a", "1"}});
  no_magic.back() ^= 1;
  read = ReadSstable(no_magic, "model.index");
  EXPECT_THAT(std::string(read.status().message()),
              HasSubstr("no table magic number at byte offset " + std::to_string(no_magic.size() - 8)));
}

// A block whose type says Snappy, checksummed as such: TensorFlow never writes one.
TEST(SstableTest, ACompressedBlockIsUnimplemented) {
  std::string table = Build({{"a", "1"}});
  // The data block is first: its contents end where its trailer's type byte is.
  const size_t contents = 3 + 1 + 1 + 4 + 4;  // entry "a"->"1" (3 varints, key, value), restart, count
  table[contents] = 1;
  uint32_t crc = crc32c::Extend(crc32c::Value(table.data(), contents), table.data() + contents, 1);
  crc = crc32c::Mask(crc);
  std::memcpy(table.data() + contents + 1, &crc, 4);
  StatusOr<Entries> read = ReadSstable(table, "t.index");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Code::kUnimplemented) << read.status();
}

}  // namespace
}  // namespace tessera
