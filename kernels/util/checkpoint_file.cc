#include "kernels/util/checkpoint_file.h"

#include <zlib.h>

#include <bit>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "graph/platform/file_io.h"
#include "graph/platform/json_util.h"

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

bool Savable(DataType dt) { return DataTypeIsNumeric(dt) || dt == DataType::kBool; }

struct Index {
  struct Entry {
    CheckpointEntry entry;
    uint64_t offset = 0, bytes = 0;
    uint32_t crc = 0;
  };
  std::vector<Entry> entries;
  uint64_t data_start = 0;
};

StatusOr<Index> ReadIndex(const ReadableFile& file) {
  const std::string& path = file.path();
  const uint64_t size = file.size();
  char magic[8];
  uint64_t header_bytes = 0;
  if (size < 16) {
    if (size >= 8 && file.ReadAt(0, magic, 8).ok() && std::memcmp(magic, kMagic, 8) == 0) {
      return errors::DataLoss("Checkpoint '", path, "' is truncated in its header");
    }
    return errors::DataLoss("'", path, "' is not a Tessera checkpoint (", size, " bytes, too short)");
  }
  RETURN_IF_ERROR(file.ReadAt(0, magic, 8));
  if (std::memcmp(magic, kMagic, 8) != 0) {
    return errors::DataLoss("'", path, "' is not a Tessera checkpoint (bad magic)");
  }
  RETURN_IF_ERROR(file.ReadAt(8, &header_bytes, 8));
  if (header_bytes > kMaxHeaderBytes || header_bytes > size - 16) {
    return errors::DataLoss("Checkpoint '", path, "' is truncated or damaged: its header claims ", header_bytes,
                            " bytes of a ", size, "-byte file");
  }
  std::string text(header_bytes, '\0');
  RETURN_IF_ERROR(file.ReadAt(16, text.data(), header_bytes));
  auto damaged = [&](std::string_view what) {
    return errors::DataLoss("Checkpoint '", path, "' has a damaged header: ", what);
  };
  StatusOr<nlohmann::json> parsed = ParseJson(text, "checkpoint header");
  if (!parsed.ok()) return damaged(parsed.status().message());
  const nlohmann::json& header = *parsed;
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
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file, AtomicFileWriter::Open(path, "checkpoint"));
  const uint64_t header_bytes = header.size();
  RETURN_IF_ERROR(file->Append(kMagic, 8));
  RETURN_IF_ERROR(file->Append(&header_bytes, 8));
  RETURN_IF_ERROR(file->Append(header));
  for (const auto& [name, t] : tensors) RETURN_IF_ERROR(file->Append(t.raw_data(), t.TotalBytes()));
  return file->Commit();
}

CheckpointReader::~CheckpointReader() = default;

StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const std::string& path) {
  std::unique_ptr<CheckpointReader> reader(new CheckpointReader);
  ASSIGN_OR_RETURN(reader->file_, ReadableFile::Open(path, "checkpoint"));
  ASSIGN_OR_RETURN(Index index, ReadIndex(*reader->file_));
  reader->data_start_ = index.data_start;
  for (Index::Entry& e : index.entries) {
    reader->entries_.push_back(std::move(e.entry));
    reader->locations_.push_back({e.offset, e.bytes, e.crc});
  }
  return reader;
}

StatusOr<size_t> CheckpointReader::IndexOf(const std::string& name) const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].name == name) return i;
  }
  return errors::NotFound("Tensor '", name, "' is not in checkpoint '", file_->path(), "'");
}

StatusOr<CheckpointEntry> CheckpointReader::Find(const std::string& name) const {
  ASSIGN_OR_RETURN(size_t i, IndexOf(name));
  return entries_[i];
}

StatusOr<Tensor> CheckpointReader::Read(const std::string& name, std::shared_ptr<Allocator> allocator) const {
  ASSIGN_OR_RETURN(size_t i, IndexOf(name));
  const Location& at = locations_[i];
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(std::move(allocator), entries_[i].dtype, entries_[i].shape));
  Status read = file_->ReadAt(data_start_ + at.offset, t.raw_data(), at.bytes);
  if (!read.ok()) {
    return errors::DataLoss("Checkpoint '", file_->path(), "' is truncated in tensor '", name, "': ", read.message());
  }
  if (Crc32(t.raw_data(), at.bytes) != at.crc) {
    return errors::DataLoss("Checkpoint '", file_->path(), "' is damaged: tensor '", name, "' fails its checksum");
  }
  return t;
}

StatusOr<std::vector<CheckpointEntry>> ReadCheckpointIndex(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader, CheckpointReader::Open(path));
  return reader->entries();
}

StatusOr<std::vector<Tensor>> ReadCheckpoint(const std::string& path, const std::vector<std::string>& names) {
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader, CheckpointReader::Open(path));
  std::vector<Tensor> out;
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(Tensor t, reader->Read(name, CpuAllocator()));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace tessera
