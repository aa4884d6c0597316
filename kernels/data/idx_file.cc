#include "kernels/data/idx_file.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/platform/file_io.h"

namespace tessera {

// gzread reads plain files too, so one path serves both.
class GzFile {
 public:
  // The errors of ReadableFile::Open: NotFound, PermissionDenied, a directory or a FIFO.
  static StatusOr<std::unique_ptr<GzFile>> Open(const std::string& path) {
    ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, ReadableFile::Open(path, "IDX file"));
    const int fd = ::dup(file->fd());
    gzFile gz = fd < 0 ? nullptr : gzdopen(fd, "rb");
    if (gz == nullptr) {
      if (fd >= 0) ::close(fd);
      return errors::ResourceExhausted("Cannot read IDX file '", path, "': out of file descriptors or memory");
    }
    return std::unique_ptr<GzFile>(new GzFile(gz, path, file->size()));
  }
  ~GzFile() { gzclose(file_); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // The most data the file on disk can hold: its size if plain, deflate's maximum
  // expansion (1032:1) if compressed. Known once something has been read.
  uint64_t MaxDataBytes() const { return gzdirect(file_) ? disk_bytes_ : disk_bytes_ * 1032; }

  // Bytes read; fewer than `n` only where the data ends (a truncated gzip stream ends
  // early too). A stream that is not gzip is DataLoss.
  StatusOr<int64_t> Read(void* dst, int64_t n) {
    int64_t total = 0;
    while (total < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<int64_t>(n - total, int64_t{1} << 30));
      const int got = gzread(file_, static_cast<char*>(dst) + total, chunk);
      if (got < 0) {
        int code = 0;
        const char* message = gzerror(file_, &code);
        return errors::DataLoss("IDX file '", path_, "' is corrupt: ", message);
      }
      if (got == 0) break;
      total += got;
    }
    return total;
  }

 private:
  GzFile(gzFile file, std::string path, uint64_t disk_bytes)
      : file_(file), path_(std::move(path)), disk_bytes_(disk_bytes) {}
  gzFile file_;
  std::string path_;
  uint64_t disk_bytes_;
};

namespace {

// Reads the header, leaving the file at the data.
StatusOr<TensorShape> ReadHeader(GzFile& file, const std::string& path) {
  unsigned char magic[4];
  ASSIGN_OR_RETURN(int64_t got, file.Read(magic, 4));
  if (got != 4 || magic[0] != 0 || magic[1] != 0) {
    return errors::InvalidArgument("'", path, "' is not an IDX file (bad magic number)");
  }
  if (magic[2] != 0x08) {
    return errors::Unimplemented("IDX file '", path, "' holds type code ", int{magic[2]},
                                 "; only unsigned bytes (8) are supported");
  }
  if (magic[3] < 1 || magic[3] > 4) {
    return errors::InvalidArgument("IDX file '", path, "' has rank ", int{magic[3]}, "; expected 1 to 4");
  }
  std::vector<int64_t> dims;
  int64_t total = 1;
  for (int d = 0; d < magic[3]; ++d) {
    unsigned char b[4];
    ASSIGN_OR_RETURN(got, file.Read(b, 4));
    if (got != 4) return errors::DataLoss("IDX file '", path, "' is truncated in its header");
    const int64_t dim = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
    // 64 GiB: far beyond any IDX dataset. Checked before multiplying, so the product
    // never overflows.
    constexpr int64_t kMaxElements = int64_t{1} << 36;
    if (std::max<int64_t>(dim, 1) > kMaxElements / total) {
      return errors::InvalidArgument("IDX file '", path, "' declares an implausible size");
    }
    total *= std::max<int64_t>(dim, 1);
    dims.push_back(dim);
  }
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Make(dims));
  if (static_cast<uint64_t>(shape.num_elements()) > file.MaxDataBytes()) {
    return errors::DataLoss("IDX file '", path, "' is truncated or damaged: ", shape.DebugString(), " needs ",
                            shape.num_elements(), " bytes of data, more than the file can hold");
  }
  return shape;
}

// Reads `shape`'s bytes into *t and returns how many the file had; *t is set only when it
// had them all. Large data is read before it is allocated, since a corrupt header may
// declare far more than the file holds; it arrives in chunks that are copied and dropped one
// by one, so reading never holds two copies of a dataset.
StatusOr<int64_t> ReadData(GzFile& file, const TensorShape& shape, const std::shared_ptr<Allocator>& allocator,
                           Tensor* t) {
  const int64_t want = shape.num_elements();
  constexpr int64_t kChunk = int64_t{8} << 20;
  if (want <= kChunk) {
    ASSIGN_OR_RETURN(Tensor small, Tensor::Allocate(allocator, DataType::kUInt8, shape));
    ASSIGN_OR_RETURN(const int64_t have, file.Read(small.data<uint8_t>(), want));
    if (have == want) *t = std::move(small);
    return have;
  }
  std::vector<std::string> chunks;
  int64_t have = 0;
  while (have < want) {
    std::string& chunk = chunks.emplace_back(std::min(kChunk, want - have), '\0');
    ASSIGN_OR_RETURN(const int64_t got, file.Read(chunk.data(), static_cast<int64_t>(chunk.size())));
    have += got;
    if (got < static_cast<int64_t>(chunk.size())) return have;
  }
  ASSIGN_OR_RETURN(*t, Tensor::Allocate(allocator, DataType::kUInt8, shape));
  uint8_t* dst = t->data<uint8_t>();
  for (std::string& chunk : chunks) {
    dst = std::copy(chunk.begin(), chunk.end(), dst);
    std::string().swap(chunk);
  }
  return have;
}

}  // namespace

StatusOr<TensorShape> ReadIdxShape(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<GzFile> file, GzFile::Open(path));
  return ReadHeader(*file, path);
}

StatusOr<Tensor> ReadIdxFile(const std::string& path, int64_t max_records) {
  ASSIGN_OR_RETURN(std::unique_ptr<GzFile> file, GzFile::Open(path));
  ASSIGN_OR_RETURN(TensorShape shape, ReadHeader(*file, path));
  if (max_records >= 0 && max_records < shape.dim(0)) shape.set_dim(0, max_records);
  Tensor t;
  ASSIGN_OR_RETURN(int64_t have, ReadData(*file, shape, CpuAllocator(), &t));
  if (!t.IsInitialized()) {
    return errors::DataLoss("IDX file '", path, "' is truncated: ", shape.DebugString(), " needs ",
                            shape.num_elements(), " bytes of data, it has ", have);
  }
  return t;
}

IdxRecordReader::IdxRecordReader(std::string path, std::unique_ptr<GzFile> file, TensorShape file_shape)
    : path_(std::move(path)), file_(std::move(file)), file_shape_(std::move(file_shape)) {
  for (int d = 1; d < file_shape_.rank(); ++d) record_shape_.AddDim(file_shape_.dim(d));
}

IdxRecordReader::~IdxRecordReader() = default;

StatusOr<std::unique_ptr<IdxRecordReader>> IdxRecordReader::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<GzFile> file, GzFile::Open(path));
  ASSIGN_OR_RETURN(TensorShape shape, ReadHeader(*file, path));
  return std::unique_ptr<IdxRecordReader>(new IdxRecordReader(path, std::move(file), std::move(shape)));
}

Status IdxRecordReader::ReadRecord(std::shared_ptr<Allocator> allocator, Tensor* record, bool* end) {
  *end = next_ >= file_shape_.dim(0);
  if (*end) return Status::OK();
  Tensor t;
  RETURN_IF_ERROR(ReadData(*file_, record_shape_, allocator, &t).status());
  if (!t.IsInitialized()) {
    const int64_t index = next_;
    next_ = file_shape_.dim(0);
    return errors::DataLoss("IDX file '", path_, "' is truncated: ", file_shape_.DebugString(),
                            " ends within record ", index);
  }
  ++next_;
  *record = std::move(t);
  return Status::OK();
}

}  // namespace tessera
