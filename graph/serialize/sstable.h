// The sorted string table that TensorFlow's checkpoint index files are: LevelDB's table
// format (tensorflow/core/lib/io/table*), uncompressed, as TensorFlow writes it. A table is
// data blocks of prefix-compressed entries, an empty metaindex block, an index block
// naming each data block, and a 48-byte footer; each block is followed by its type byte
// and the masked CRC-32C of both.
//
//   SstableBuilder b;
//   RETURN_IF_ERROR(b.Add("", header));          // keys strictly increasing, bytewise
//   RETURN_IF_ERROR(b.Add("dense/kernel", entry));
//   std::string bytes = b.Finish();
//   ASSIGN_OR_RETURN(auto entries, ReadSstable(bytes, "model.index"));
//
// Reading checks every checksum, length and key order, and fails with DataLoss naming the
// file and the byte offset of what is damaged; a compressed block is Unimplemented. The
// whole table is read at once (an index holds one entry per tensor). Both classes are
// single-threaded objects; ReadSstable is thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/platform/status.h"

namespace tessera {

class SstableBuilder {
 public:
  // TensorFlow's block size: a checkpoint's index is one block unless it is large.
  explicit SstableBuilder(size_t block_size = size_t{256} << 10) : block_size_(block_size) {}

  // InvalidArgument for a key not greater than the last one.
  Status Add(std::string_view key, std::string_view value);
  // The table's bytes. The builder is spent after.
  std::string Finish();

 private:
  // Appends the block under construction to `out_`, its handle to the index block.
  void FlushDataBlock();

  // A block being built: entries, then the restart offsets (every `interval` entries a key
  // is stored whole), then their count.
  struct Block {
    explicit Block(int restart_interval) : interval(restart_interval) {}
    int interval;
    std::string bytes;
    std::vector<uint32_t> restarts = {0};
    int since_restart = 0;
    std::string last_key;
    void Add(std::string_view key, std::string_view value);
    std::string Finish();
    bool empty() const { return bytes.empty(); }
  };

  size_t block_size_;
  std::string out_;
  Block data_{16};
  Block index_{1};
  std::string last_key_;
  bool any_ = false;
};

// Every entry of `table` in key order. `file` names it in errors.
StatusOr<std::vector<std::pair<std::string, std::string>>> ReadSstable(std::string_view table,
                                                                      const std::string& file);

}  // namespace tessera
