// Tessera's checkpoint file: named tensors, written so that a crash never leaves a
// half-written checkpoint where a good one was, and read so that any damage is a clear
// error. The format, version 1:
//
//   bytes 0-7    the magic "TSRCKPT1"
//   bytes 8-15   H, the header's length, a little-endian uint64
//   next H bytes the header, JSON:
//                  {"format": 1,
//                   "tensors": [{"name": "conv2d/kernel", "dtype": "float32",
//                                "shape": [3, 3, 1, 32], "offset": 0, "bytes": 1152,
//                                "crc32": 2774961412}, ...]}
//   the rest     the tensors' data, row-major, little-endian, each at its "offset" from
//                the end of the header; "crc32" is zlib's CRC-32 of those bytes.
//
// Numeric and bool tensors only. Both functions are thread-safe; concurrent writers of one
// path leave one of their files, whole.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/platform/file_io.h"
#include "graph/tensor.h"

namespace tessera {

// Writes `tensors` (unique names) to a temporary file beside `path`, flushes it to disk and
// renames it over `path`. On any error `path` is untouched and the temporary file removed.
Status WriteCheckpoint(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors);

struct CheckpointEntry {
  std::string name;
  DataType dtype;
  TensorShape shape;
};

// An open checkpoint whose header has been read and checked against the file's size; its
// tensors are read one at a time, so a caller can check an entry before reading its data.
class CheckpointReader {
 public:
  // NotFound for a missing file, DataLoss for a file that is not a checkpoint or whose header
  // is damaged or truncated, and the errors of ReadableFile::Open (a FIFO, a directory).
  static StatusOr<std::unique_ptr<CheckpointReader>> Open(const std::string& path);
  ~CheckpointReader();

  const std::vector<CheckpointEntry>& entries() const { return entries_; }
  // NotFound for a name the file lacks.
  StatusOr<CheckpointEntry> Find(const std::string& name) const;
  // The named tensor in memory from `allocator`; DataLoss (naming the tensor) for data that
  // is short or fails its checksum.
  StatusOr<Tensor> Read(const std::string& name, std::shared_ptr<Allocator> allocator) const;

 private:
  struct Location {
    uint64_t offset = 0, bytes = 0;
    uint32_t crc = 0;
  };
  CheckpointReader() = default;
  StatusOr<size_t> IndexOf(const std::string& name) const;
  std::unique_ptr<ReadableFile> file_;
  std::vector<CheckpointEntry> entries_;
  std::vector<Location> locations_;  // parallel to entries_
  uint64_t data_start_ = 0;
};

// The tensors a checkpoint holds, from its header.
StatusOr<std::vector<CheckpointEntry>> ReadCheckpointIndex(const std::string& path);
// The named tensors, in the order asked, in host memory.
StatusOr<std::vector<Tensor>> ReadCheckpoint(const std::string& path, const std::vector<std::string>& names);

}  // namespace tessera
