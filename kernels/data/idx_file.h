// Reading IDX files, the format of MNIST and Fashion-MNIST: a big-endian header (two zero
// bytes, a type code, the rank, one uint32 per dimension) and then the data, row-major.
// Files may be gzipped. Only unsigned bytes (type code 0x08) are read, which is what those
// datasets use.
//
//   StatusOr<Tensor> images = ReadIdxFile("train-images-idx3-ubyte.gz");  // uint8 [60000,28,28]
//
// or record by record, never holding the whole file:
//
//   ASSIGN_OR_RETURN(auto reader, IdxRecordReader::Open("train-images-idx3-ubyte.gz"));
//   Tensor image;  // uint8 [28,28]
//   bool end = false;
//   RETURN_IF_ERROR(reader->ReadRecord(CpuAllocator(), &image, &end));
//
// The functions are thread-safe; one IdxRecordReader must not be used by two threads at once.
#pragma once

#include <memory>
#include <string>

#include "graph/tensor.h"

namespace tessera {

class GzFile;

class IdxRecordReader {
 public:
  // Opens `path` and reads its header; the errors of ReadIdxShape.
  static StatusOr<std::unique_ptr<IdxRecordReader>> Open(const std::string& path);
  ~IdxRecordReader();

  // The file's shape less its first dimension, the number of records.
  const TensorShape& record_shape() const { return record_shape_; }
  // The next record, in memory from `allocator`, or *end after the last. DataLoss when the
  // file ends early; reading after that gives *end.
  Status ReadRecord(std::shared_ptr<Allocator> allocator, Tensor* record, bool* end);

 private:
  IdxRecordReader(std::string path, std::unique_ptr<GzFile> file, TensorShape file_shape);

  std::string path_;
  std::unique_ptr<GzFile> file_;
  TensorShape file_shape_;  // [records, record_shape...]
  TensorShape record_shape_;
  int64_t next_ = 0;
};

// The file's dimensions. The errors of ReadableFile::Open (NotFound, PermissionDenied, not a
// regular file), InvalidArgument for a file that is not IDX or implausibly large,
// Unimplemented for another type code, DataLoss for a short header, corrupt gzip data, or
// a size the file cannot hold.
StatusOr<TensorShape> ReadIdxShape(const std::string& path);
// The file as a uint8 tensor, its first `max_records` records when that is >= 0; the errors
// above, and DataLoss when the data is short.
StatusOr<Tensor> ReadIdxFile(const std::string& path, int64_t max_records = -1);

}  // namespace tessera
