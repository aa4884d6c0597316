#include "kernels/checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace tessera {
namespace {

static_assert(std::endian::native == std::endian::little, "checkpoints are written in host order");

constexpr char kMagic[8] = {'T', 'S', 'R', 'C', 'K', 'P', 'T', '1'};
// A header past this is damage, not a model: 64 MiB of JSON is a million tensors.
constexpr uint64_t kMaxHeaderBytes = uint64_t{64} << 20;

uint32_t Crc32(const void* data, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, size_t{1} << 30));
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

bool Savable(DataType dt) { return dt != DataType::kString && dt != DataType::kVariant; }

// Writes all of `data` to `fd`.
bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t got = ::write(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

struct Index {
  struct Entry {
    CheckpointEntry entry;
    uint64_t offset = 0, bytes = 0;
    uint32_t crc = 0;
  };
  std::vector<Entry> entries;
  uint64_t data_start = 0;
};

StatusOr<Index> ReadIndex(std::ifstream& in, const std::string& path) {
  if (!in) return errors::NotFound("Checkpoint '", path, "' not found");
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  char magic[8];
  uint64_t header_bytes = 0;
  if (!in.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) {
    return errors::DataLoss("'", path, "' is not a Tessera checkpoint (bad magic)");
  }
  if (!in.read(reinterpret_cast<char*>(&header_bytes), 8)) {
    return errors::DataLoss("Checkpoint '", path, "' is truncated in its header");
  }
  if (header_bytes > kMaxHeaderBytes || header_bytes > size - 16) {
    return errors::DataLoss("Checkpoint '", path, "' is truncated or damaged: its header claims ", header_bytes,
                            " bytes of a ", size, "-byte file");
  }
  std::string text(header_bytes, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(header_bytes))) {
    return errors::DataLoss("Checkpoint '", path, "' is truncated in its header");
  }
  const nlohmann::json header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto damaged = [&](std::string_view what) {
    return errors::DataLoss("Checkpoint '", path, "' has a damaged header: ", what);
  };
  if (header.is_discarded()) return damaged("not JSON");
  if (!header.is_object() || !header.contains("format") ||
      header["format"] != 1 || !header.contains("tensors") ||
      !header["tensors"].is_array()) {
    return damaged("not a format 1 header");
  }
  Index index;
  index.data_start = 16 + header_bytes;
  const uint64_t data_size = size - index.data_start;
  std::map<std::string, int> seen;
  for (const nlohmann::json& t : header["tensors"]) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("dtype") ||
        !t["dtype"].is_string() || !t.contains("shape") || !t["shape"].is_array() || !t.contains("offset") ||
        !t["offset"].is_number_unsigned() || !t.contains("bytes") || !t["bytes"].is_number_unsigned() ||
        !t.contains("crc32") || !t["crc32"].is_number_unsigned()) {
      return damaged("a tensor entry lacks a field or has one of the wrong type");
    }
    Index::Entry e;
    e.entry.name = t["name"].get<std::string>();
    StatusOr<DataType> dtype = DataTypeFromName(t["dtype"].get<std::string>());
    if (!dtype.ok() || !Savable(*dtype)) return damaged(StrCat("tensor '", e.entry.name, "' has a bad dtype"));
    e.entry.dtype = *dtype;
    std::vector<int64_t> dims;
    uint64_t elements = 1;
    for (const nlohmann::json& d : t["shape"]) {
      // Each dimension and their product stay below the data's size (or are zero).
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 40)) {
        return damaged(StrCat("tensor '", e.entry.name, "' has a bad shape"));
      }
      const uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && elements > (uint64_t{1} << 40) / dim) {
        return damaged(StrCat("tensor '", e.entry.name, "' has a bad shape"));
      }
      elements *= dim;
      dims.push_back(static_cast<int64_t>(dim));
    }
    StatusOr<TensorShape> shape = TensorShape::Make(dims);
    if (!shape.ok()) return damaged(StrCat("tensor '", e.entry.name, "' has a bad shape"));
    e.entry.shape = *shape;
    e.offset = t["offset"].get<uint64_t>();
    e.bytes = t["bytes"].get<uint64_t>();
    e.crc = static_cast<uint32_t>(t["crc32"].get<uint64_t>());
    if (e.bytes != elements * DataTypeSize(e.entry.dtype)) {
      return damaged(StrCat("tensor '", e.entry.name, "' has ", e.bytes, " bytes for shape ",
                            e.entry.shape.DebugString()));
    }
    if (e.offset > data_size || e.bytes > data_size - e.offset) {
      return errors::DataLoss("Checkpoint '", path, "' is truncated: tensor '", e.entry.name, "' ends at byte ",
                              index.data_start + e.offset + e.bytes, " of a ", size, "-byte file");
    }
    if (!seen.emplace(e.entry.name, 0).second) return damaged(StrCat("tensor '", e.entry.name, "' appears twice"));
    index.entries.push_back(std::move(e));
  }
  return index;
}

}  // namespace

Status WriteCheckpoint(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  nlohmann::json entries = nlohmann::json::array();
  std::map<std::string, int> seen;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (!seen.emplace(name, 0).second) return errors::InvalidArgument("Tensor '", name, "' is saved twice");
    if (!Savable(t.dtype())) {
      return errors::Unimplemented("Cannot save tensor '", name, "' of type ", DataTypeName(t.dtype()));
    }
    const std::span<const int64_t> dims = t.shape().dims();
    entries.push_back({{"name", name},
                       {"dtype", std::string(DataTypeName(t.dtype()))},
                       {"shape", std::vector<int64_t>(dims.begin(), dims.end())},
                       {"offset", offset},
                       {"bytes", t.TotalBytes()},
                       {"crc32", Crc32(t.raw_data(), t.TotalBytes())}});
    offset += t.TotalBytes();
  }
  const std::string header = nlohmann::json{{"format", 1}, {"tensors", entries}}.dump();
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = StrCat(path, ".tmp.", ::getpid(), ".", counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errors::Unavailable("Cannot write checkpoint '", path, "': ", std::strerror(errno));
  const uint64_t header_bytes = header.size();
  bool ok = WriteAll(fd, kMagic, 8) && WriteAll(fd, &header_bytes, 8) && WriteAll(fd, header.data(), header.size());
  for (size_t i = 0; ok && i < tensors.size(); ++i) {
    ok = WriteAll(fd, tensors[i].second.raw_data(), tensors[i].second.TotalBytes());
  }
  const int saved_errno = errno;
  ok = ok && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (ok && ::rename(tmp.c_str(), path.c_str()) == 0) return Status::OK();
  const std::string reason = std::strerror(errno != 0 ? errno : saved_errno);
  ::unlink(tmp.c_str());
  return errors::Unavailable("Cannot write checkpoint '", path, "': ", reason);
}

StatusOr<std::vector<CheckpointEntry>> ReadCheckpointIndex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  ASSIGN_OR_RETURN(Index index, ReadIndex(in, path));
  std::vector<CheckpointEntry> out;
  for (const Index::Entry& e : index.entries) out.push_back(e.entry);
  return out;
}

StatusOr<std::vector<Tensor>> ReadCheckpoint(const std::string& path, const std::vector<std::string>& names) {
  std::ifstream in(path, std::ios::binary);
  ASSIGN_OR_RETURN(Index index, ReadIndex(in, path));
  std::vector<Tensor> out;
  for (const std::string& name : names) {
    auto it = std::find_if(index.entries.begin(), index.entries.end(),
                           [&](const Index::Entry& e) { return e.entry.name == name; });
    if (it == index.entries.end()) return errors::NotFound("Tensor '", name, "' is not in checkpoint '", path, "'");
    ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator(), it->entry.dtype, it->entry.shape));
    in.seekg(static_cast<std::streamoff>(index.data_start + it->offset));
    if (!in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(it->bytes))) {
      return errors::DataLoss("Checkpoint '", path, "' is truncated in tensor '", name, "'");
    }
    if (Crc32(t.raw_data(), it->bytes) != it->crc) {
      return errors::DataLoss("Checkpoint '", path, "' is damaged: tensor '", name, "' fails its checksum");
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace tessera
