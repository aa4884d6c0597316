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

#include <string>
#include <utility>
#include <vector>

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

// The tensors a checkpoint holds, from its header. NotFound for a missing file, DataLoss
// for a file that is not a checkpoint or whose header is damaged or truncated.
StatusOr<std::vector<CheckpointEntry>> ReadCheckpointIndex(const std::string& path);

// The named tensors, in the order asked, each checked against its checksum. The errors of
// ReadCheckpointIndex, NotFound for a name the file lacks, DataLoss (naming the tensor) for
// data that is short or fails its checksum.
StatusOr<std::vector<Tensor>> ReadCheckpoint(const std::string& path, const std::vector<std::string>& names);

}  // namespace tessera
