#include "graph/serialize/sstable.h"

#include <cstring>

#include "graph/platform/crc32c.h"

namespace tessera {
namespace {

constexpr uint64_t kMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterSize = 48;  // two handles of at most 20 bytes, padding, the magic
constexpr size_t kTrailerSize = 5;  // type byte and masked CRC
constexpr char kNoCompression = 0;

void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutVarint(std::string* out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out->push_back(static_cast<char>(v | 0x80));
  out->push_back(static_cast<char>(v));
}

uint32_t Fixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // little-endian hosts only, as TensorFlow's files are
  return v;
}

// Appends a block's contents and trailer; returns its handle (offset, size).
std::string AppendBlock(std::string* out, const std::string& contents) {
  std::string handle;
  PutVarint(&handle, out->size());
  PutVarint(&handle, contents.size());
  out->append(contents);
  uint32_t crc = crc32c::Value(contents.data(), contents.size());
  crc = crc32c::Extend(crc, &kNoCompression, 1);
  out->push_back(kNoCompression);
  PutFixed32(out, crc32c::Mask(crc));
  return handle;
}

// Reads the table, tracking where in the file each piece lies for its errors.
class Reader {
 public:
  Reader(std::string_view table, const std::string& file) : table_(table), file_(file) {}

  StatusOr<std::vector<std::pair<std::string, std::string>>> ReadAll() {
    if (table_.size() < kFooterSize) {
      return errors::DataLoss("'", file_, "' is not a TensorFlow table: ", table_.size(), " bytes, under the ",
                              kFooterSize, " of a footer");
    }
    const size_t footer = table_.size() - kFooterSize;
    uint64_t magic;
    std::memcpy(&magic, table_.data() + table_.size() - 8, 8);
    if (magic != kMagic) {
      return errors::DataLoss("'", file_, "' is not a TensorFlow table: no table magic number at byte offset ",
                              table_.size() - 8);
    }
    size_t pos = footer;
    uint64_t unused_offset, unused_size, index_offset, index_size;
    RETURN_IF_ERROR(Varint(&pos, footer + 40, &unused_offset, "the footer's metaindex handle"));
    RETURN_IF_ERROR(Varint(&pos, footer + 40, &unused_size, "the footer's metaindex handle"));
    RETURN_IF_ERROR(Varint(&pos, footer + 40, &index_offset, "the footer's index handle"));
    RETURN_IF_ERROR(Varint(&pos, footer + 40, &index_size, "the footer's index handle"));
    ASSIGN_OR_RETURN(std::string_view index, Block(index_offset, index_size, footer));
    std::vector<std::pair<std::string, std::string>> handles, entries;
    RETURN_IF_ERROR(Entries(index, index_offset, &handles));
    uint64_t blocks_end = 0;  // data blocks follow one another: no block is read twice
    for (const auto& [unused_key, handle] : handles) {
      size_t p = 0;
      uint64_t offset, size;
      Reader h(handle, file_);
      // A handle's errors name the file, not an offset inside the index entry's value.
      Status s = h.Varint(&p, handle.size(), &offset, "a data block's handle");
      if (s.ok()) s = h.Varint(&p, handle.size(), &size, "a data block's handle");
      if (!s.ok()) {
        return errors::DataLoss("'", file_, "': a damaged data block handle in the index block at byte offset ",
                                index_offset);
      }
      if (offset < blocks_end) {
        return errors::DataLoss("'", file_, "': the data block at byte offset ", offset,
                                " overlaps the one before it");
      }
      ASSIGN_OR_RETURN(std::string_view block, Block(offset, size, footer));
      RETURN_IF_ERROR(Entries(block, offset, &entries));
      blocks_end = offset + size + kTrailerSize;
    }
    for (size_t i = 1; i < entries.size(); ++i) {
      if (!(entries[i - 1].first < entries[i].first)) {
        return errors::DataLoss("'", file_, "': its keys are out of order ('", entries[i - 1].first, "' then '",
                                entries[i].first, "')");
      }
    }
    return entries;
  }

 private:
  Status Varint(size_t* pos, size_t end, uint64_t* v, std::string_view what) const {
    *v = 0;
    for (int shift = 0; shift < 64 && *pos < end; shift += 7) {
      const auto byte = static_cast<uint8_t>(table_[(*pos)++]);
      *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return Status::OK();
    }
    return errors::DataLoss("'", file_, "': ", what, " is damaged at byte offset ", *pos);
  }

  // A block's contents, its trailer checked; it must end before `limit`.
  StatusOr<std::string_view> Block(uint64_t offset, uint64_t size, size_t limit) const {
    if (offset > limit || size > limit - offset || kTrailerSize > limit - offset - size) {
      return errors::DataLoss("'", file_, "': a block at byte offset ", offset, " of ", size,
                              " bytes runs past the table's ", limit, " bytes of blocks");
    }
    std::string_view contents = table_.substr(offset, size);
    const char type = table_[offset + size];
    uint32_t crc = crc32c::Value(contents.data(), contents.size());
    crc = crc32c::Extend(crc, &type, 1);
    if (crc32c::Unmask(Fixed32(table_.data() + offset + size + 1)) != crc) {
      return errors::DataLoss("'", file_, "': the block at byte offset ", offset, " fails its checksum");
    }
    if (type != kNoCompression) {
      return errors::Unimplemented("'", file_, "': the block at byte offset ", offset, " is compressed (type ",
                                   static_cast<int>(type), "); TensorFlow writes tables uncompressed");
    }
    return contents;
  }

  // Appends a block's entries; `offset` is the block's place in the file, for errors.
  Status Entries(std::string_view block, uint64_t offset, std::vector<std::pair<std::string, std::string>>* out) const {
    auto damaged = [&](size_t at, std::string_view what) {
      return errors::DataLoss("'", file_, "': ", what, " in the block at byte offset ", offset, " (byte offset ",
                              offset + at, ")");
    };
    if (block.size() < 4) return damaged(0, "a block too short for its restart count");
    const uint64_t restarts = Fixed32(block.data() + block.size() - 4);
    if (restarts == 0) return Status::OK();  // an empty block
    if ((restarts + 1) * 4 > block.size()) return damaged(block.size() - 4, "a restart count larger than the block");
    const size_t end = block.size() - (restarts + 1) * 4;
    Reader r(block, file_);
    std::string key;
    for (size_t pos = 0; pos < end;) {
      const size_t start = pos;
      uint64_t shared = 0, non_shared = 0, value_size = 0;
      if (!r.Varint(&pos, end, &shared, "").ok() || !r.Varint(&pos, end, &non_shared, "").ok() ||
          !r.Varint(&pos, end, &value_size, "").ok()) {
        return damaged(start, "a damaged entry header");
      }
      if (shared > key.size() || non_shared > end - pos || value_size > end - pos - non_shared) {
        return damaged(start, "an entry whose lengths run past its block");
      }
      key.resize(shared);
      key.append(block.substr(pos, non_shared));
      pos += non_shared;
      out->emplace_back(key, std::string(block.substr(pos, value_size)));
      pos += value_size;
    }
    return Status::OK();
  }

  std::string_view table_;
  const std::string& file_;
};

}  // namespace

void SstableBuilder::Block::Add(std::string_view key, std::string_view value) {
  size_t shared = 0;
  if (since_restart == interval) {
    restarts.push_back(static_cast<uint32_t>(bytes.size()));
    since_restart = 0;
  } else {
    while (shared < key.size() && shared < last_key.size() && key[shared] == last_key[shared]) ++shared;
  }
  PutVarint(&bytes, shared);
  PutVarint(&bytes, key.size() - shared);
  PutVarint(&bytes, value.size());
  bytes.append(key.substr(shared));
  bytes.append(value);
  last_key.assign(key);
  ++since_restart;
}

std::string SstableBuilder::Block::Finish() {
  std::string out = std::move(bytes);
  for (uint32_t r : restarts) PutFixed32(&out, r);
  PutFixed32(&out, static_cast<uint32_t>(restarts.size()));
  bytes.clear();
  restarts = {0};
  since_restart = 0;
  last_key.clear();
  return out;
}

Status SstableBuilder::Add(std::string_view key, std::string_view value) {
  if (any_ && !(last_key_ < key)) {
    return errors::InvalidArgument("table keys must increase: '", key, "' after '", last_key_, "'");
  }
  any_ = true;
  last_key_.assign(key);
  data_.Add(key, value);
  if (data_.bytes.size() + 4 * (data_.restarts.size() + 1) >= block_size_) FlushDataBlock();
  return Status::OK();
}

void SstableBuilder::FlushDataBlock() {
  if (data_.empty()) return;
  // The index names each block by its last key: no less than any key in it, less than any
  // key after it.
  const std::string last = data_.last_key;
  index_.Add(last, AppendBlock(&out_, data_.Finish()));
}

std::string SstableBuilder::Finish() {
  FlushDataBlock();
  const std::string metaindex = AppendBlock(&out_, Block{1}.Finish());
  const std::string index = AppendBlock(&out_, index_.Finish());
  std::string footer = metaindex + index;
  footer.resize(kFooterSize - 8, '\0');
  PutFixed32(&footer, static_cast<uint32_t>(kMagic));
  PutFixed32(&footer, static_cast<uint32_t>(kMagic >> 32));
  out_.append(footer);
  return std::move(out_);
}

StatusOr<std::vector<std::pair<std::string, std::string>>> ReadSstable(std::string_view table,
                                                                      const std::string& file) {
  return Reader(table, file).ReadAll();
}

}  // namespace tessera
