#include "graph/serialize/tensor_bundle.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "graph/platform/crc32c.h"
#include "graph/protos/tensor_bundle.pb.h"
#include "graph/serialize/sstable.h"
#include "graph/serialize/tensorflow_dtypes.h"

namespace tessera {
namespace {

namespace pb = tessera::tfgraph;

constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;
// Shards are opened with the index: a bound on the descriptors one checkpoint may take.
constexpr int kMaxShards = 1024;
// TensorFlow's kTensorBundleVersion and the consumer version this reader is.
constexpr int kBundleVersion = 1;

void PutVarint(std::string* out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out->push_back(static_cast<char>(v | 0x80));
  out->push_back(static_cast<char>(v));
}

// A string element's length as TensorFlow checksums it: four bytes where it fits, else eight.
uint32_t ExtendWithLength(uint32_t crc, uint64_t length) {
  if (length <= UINT32_MAX) {
    const auto l32 = static_cast<uint32_t>(length);
    return crc32c::Extend(crc, &l32, sizeof l32);
  }
  return crc32c::Extend(crc, &length, sizeof length);
}

// A string tensor's bytes in the bundle's layout; `crc` gets their checksum.
std::string EncodeStrings(const Tensor& t, uint32_t* crc) {
  const std::string* s = t.data<std::string>();
  std::string out;
  uint32_t c = 0;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    PutVarint(&out, s[i].size());
    c = ExtendWithLength(c, s[i].size());
  }
  const uint32_t lengths_crc = crc32c::Mask(c);
  out.append(reinterpret_cast<const char*>(&lengths_crc), sizeof lengths_crc);
  c = crc32c::Extend(c, &lengths_crc, sizeof lengths_crc);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    out.append(s[i]);
    c = crc32c::Extend(c, s[i].data(), s[i].size());
  }
  *crc = c;
  return out;
}

Status CheckHeader(const pb::BundleHeaderProto& h, const std::string& file) {
  if (h.num_shards() < 1 || h.num_shards() > kMaxShards) {
    return errors::DataLoss("Checkpoint index '", file, "' claims ", h.num_shards(), " data files (1 to ", kMaxShards,
                            " are read)");
  }
  if (h.endianness() != pb::BundleHeaderProto::LITTLE) {
    return errors::Unimplemented("Checkpoint '", file, "' was written big-endian; Tessera reads little-endian ones");
  }
  const pb::VersionDef& v = h.version();
  bool bad = v.producer() < 0 || v.min_consumer() > kBundleVersion;
  for (int b : v.bad_consumers()) bad = bad || b == kBundleVersion;
  if (bad) {
    return errors::Unimplemented("Checkpoint '", file, "' is of bundle version ", v.producer(), " (readers from ",
                                 v.min_consumer(), "); Tessera reads version ", kBundleVersion);
  }
  return Status::OK();
}

}  // namespace

std::string BundleIndexFile(const std::string& prefix) { return prefix + ".index"; }

std::string BundleDataFile(const std::string& prefix, int shard, int num_shards) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".data-%05d-of-%05d", shard, num_shards);
  return prefix + suffix;
}

StatusOr<std::unique_ptr<BundleWriter>> BundleWriter::Open(const std::string& prefix) {
  std::unique_ptr<BundleWriter> w(new BundleWriter);
  w->prefix_ = prefix;
  // As TensorFlow's writer: the prefix's folder is made (a sharded save's temporary one).
  const std::filesystem::path dir = std::filesystem::path(prefix).parent_path();
  if (!dir.empty()) RETURN_IF_ERROR(CreateDirectories(dir.string(), "checkpoint folder"));
  ASSIGN_OR_RETURN(w->data_, AtomicFileWriter::Open(BundleDataFile(prefix, 0, 1), "checkpoint data"));
  return w;
}

Status BundleWriter::Add(const std::string& name, const Tensor& t) {
  if (name.empty()) return errors::InvalidArgument("A checkpoint's tensor needs a name ('' is the header's key)");
  if (entries_.count(name) != 0) return errors::InvalidArgument("Tensor '", name, "' is added to the checkpoint twice");
  if (t.dtype() == DataType::kVariant || t.dtype() == DataType::kResource || !t.IsInitialized()) {
    return errors::InvalidArgument("Tensor '", name, "' is ", DataTypeName(t.dtype()),
                                   ", which a checkpoint cannot hold");
  }
  pb::BundleEntryProto e;
  e.set_dtype(static_cast<pb::DataType>(DataTypeToTensorFlow(t.dtype())));
  for (int64_t d : t.shape().dims()) e.mutable_shape()->add_dim()->set_size(d);
  e.set_offset(static_cast<int64_t>(offset_));
  uint32_t crc;
  if (t.dtype() == DataType::kString) {
    const std::string bytes = EncodeStrings(t, &crc);
    RETURN_IF_ERROR(data_->Append(bytes));
    e.set_size(static_cast<int64_t>(bytes.size()));
  } else {
    crc = crc32c::Value(t.raw_data(), t.TotalBytes());
    RETURN_IF_ERROR(data_->Append(t.raw_data(), t.TotalBytes()));
    e.set_size(static_cast<int64_t>(t.TotalBytes()));
  }
  e.set_crc32c(crc32c::Mask(crc));
  offset_ += static_cast<uint64_t>(e.size());
  entries_[name] = e.SerializeAsString();
  return Status::OK();
}

Status BundleWriter::Finish() {
  RETURN_IF_ERROR(data_->Commit());
  pb::BundleHeaderProto header;
  header.set_num_shards(1);
  header.mutable_version()->set_producer(kBundleVersion);
  SstableBuilder table;
  RETURN_IF_ERROR(table.Add("", header.SerializeAsString()));
  for (const auto& [name, entry] : entries_) RETURN_IF_ERROR(table.Add(name, entry));
  return WriteFileAtomically(BundleIndexFile(prefix_), table.Finish(), "checkpoint index");
}

StatusOr<std::unique_ptr<BundleReader>> BundleReader::Open(const std::string& prefix) {
  const std::string index_file = BundleIndexFile(prefix);
  ASSIGN_OR_RETURN(std::string index, ReadFileToString(index_file, "checkpoint index", kMaxIndexBytes));
  ASSIGN_OR_RETURN(auto table, ReadSstable(index, index_file));
  if (table.empty() || !table[0].first.empty()) {
    return errors::DataLoss("Checkpoint index '", index_file, "' has no header entry");
  }
  pb::BundleHeaderProto header;
  if (!header.ParseFromString(table[0].second)) {
    return errors::DataLoss("Checkpoint index '", index_file, "': its header does not parse");
  }
  RETURN_IF_ERROR(CheckHeader(header, index_file));
  std::unique_ptr<BundleReader> r(new BundleReader);
  r->prefix_ = prefix;
  r->header_ = table[0].second;
  for (int i = 0; i < header.num_shards(); ++i) {
    ASSIGN_OR_RETURN(auto shard, ReadableFile::Open(BundleDataFile(prefix, i, header.num_shards()), "checkpoint data"));
    r->shards_.push_back(std::move(shard));
  }
  for (size_t i = 1; i < table.size(); ++i) {
    const std::string& name = table[i].first;
    auto damaged = [&](auto&&... what) {
      return errors::DataLoss("Checkpoint '", prefix, "' is damaged: tensor '", name, "' ", what...);
    };
    pb::BundleEntryProto p;
    if (!p.ParseFromString(table[i].second)) return damaged("has an index entry that does not parse");
    BundleEntry e;
    e.name = name;
    e.tf_dtype = p.dtype();
    StatusOr<DataType> dtype = DataTypeFromTensorFlow(p.dtype());
    if (dtype.ok()) e.dtype = *dtype;
    if (p.shape().unknown_rank() || p.shape().dim_size() > TensorShape::kMaxRank) {
      return damaged("has a shape of unknown rank or rank ", p.shape().dim_size());
    }
    std::vector<int64_t> dims;
    for (const auto& d : p.shape().dim()) dims.push_back(d.size());
    for (int64_t d : dims) {
      if (d < 0) return damaged("has a negative dimension");
    }
    StatusOr<TensorShape> shape = TensorShape::Make(dims);
    if (!shape.ok()) return damaged("has a shape Tessera cannot hold: ", shape.status().message());
    e.shape = *shape;
    e.sliced = p.slices_size() > 0;
    if (!e.sliced) {
      if (p.shard_id() < 0 || p.shard_id() >= header.num_shards() || p.offset() < 0 || p.size() < 0) {
        return damaged("names shard ", p.shard_id(), " at offset ", p.offset(), " of size ", p.size());
      }
      e.shard = p.shard_id();
      e.offset = static_cast<uint64_t>(p.offset());
      e.size = static_cast<uint64_t>(p.size());
      const uint64_t shard_size = r->shards_[e.shard]->size();
      if (e.offset > shard_size || e.size > shard_size - e.offset) {
        return damaged("lies at bytes ", e.offset, " to ", e.offset + e.size, " of '",
                       r->shards_[e.shard]->path(), "', which has ", shard_size);
      }
      const auto n = static_cast<uint64_t>(e.shape.num_elements());
      if (e.dtype != DataType::kInvalid && DataTypeSize(e.dtype) > 0 && e.size != n * DataTypeSize(e.dtype)) {
        return damaged("has ", e.size, " bytes for ", n, " elements of ", DataTypeName(e.dtype));
      }
      // At least a byte of length per string and the lengths' checksum: a shape cannot ask
      // for more strings than the file has bytes.
      if (e.dtype == DataType::kString && n > 0 && (e.size < 4 || e.size - 4 < n)) {
        return damaged("has ", e.size, " bytes for ", n, " strings");
      }
    }
    e.crc = crc32c::Unmask(p.crc32c());
    r->by_name_[name] = r->entries_.size();
    r->entries_.push_back(std::move(e));
    r->serialized_.push_back(std::move(table[i].second));
  }
  return r;
}

StatusOr<BundleEntry> BundleReader::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return errors::NotFound("Tensor '", name, "' is not in checkpoint '", prefix_, "'");
  return entries_[it->second];
}

StatusOr<std::map<std::string, std::string>> ObjectGraphKeys(const BundleReader& reader) {
  constexpr char kObjectGraph[] = "_CHECKPOINTABLE_OBJECT_GRAPH";
  std::map<std::string, std::string> keys;
  if (!reader.Find(kObjectGraph).ok()) return keys;
  ASSIGN_OR_RETURN(Tensor t, reader.Read(kObjectGraph, CpuAllocator()));
  pb::TrackableObjectGraph graph;
  if (t.dtype() != DataType::kString || t.NumElements() != 1 || !graph.ParseFromString(t.data<std::string>()[0])) {
    return errors::DataLoss("The object graph of checkpoint '", reader.prefix(), "' (", kObjectGraph,
                            ") is not a TrackableObjectGraph");
  }
  for (const auto& node : graph.nodes()) {
    for (const auto& attribute : node.attributes()) {
      if (!attribute.full_name().empty()) keys[attribute.full_name()] = attribute.checkpoint_key();
    }
  }
  return keys;
}

StatusOr<Tensor> BundleReader::Read(const std::string& name, std::shared_ptr<Allocator> allocator) const {
  ASSIGN_OR_RETURN(BundleEntry e, Find(name));
  if (e.sliced) {
    return errors::Unimplemented("Tensor '", name, "' in checkpoint '", prefix_,
                                 "' is a partitioned variable, saved in slices; Tessera reads whole tensors");
  }
  if (e.dtype == DataType::kInvalid || e.dtype == DataType::kVariant || e.dtype == DataType::kResource) {
    return errors::Unimplemented("Tensor '", name, "' in checkpoint '", prefix_, "' is ",
                                 DataTypeFromTensorFlow(e.tf_dtype).status().message(),
                                 e.dtype == DataType::kInvalid ? "" : " Tessera reads from checkpoints");
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(std::move(allocator), e.dtype, e.shape));
  if (e.dtype == DataType::kString) {
    RETURN_IF_ERROR(ReadStrings(e, &t));
    return t;
  }
  const ReadableFile& shard = *shards_[e.shard];
  Status read = shard.ReadAt(e.offset, t.raw_data(), e.size);
  if (!read.ok()) return errors::DataLoss("Checkpoint '", prefix_, "': tensor '", name, "': ", read.message());
  if (crc32c::Value(t.raw_data(), e.size) != e.crc) {
    return errors::DataLoss("Checkpoint '", prefix_, "' is damaged: tensor '", name, "' in '", shard.path(),
                            "' at byte offset ", e.offset, " fails its checksum");
  }
  return t;
}

Status BundleReader::ReadStrings(const BundleEntry& e, Tensor* t) const {
  const ReadableFile& shard = *shards_[e.shard];
  auto damaged = [&](auto&&... what) {
    return errors::DataLoss("Checkpoint '", prefix_, "' is damaged: string tensor '", e.name, "' in '", shard.path(),
                            "' at byte offset ", e.offset, " ", what...);
  };
  std::string bytes(e.size, '\0');
  Status read = shard.ReadAt(e.offset, bytes.data(), bytes.size());
  if (!read.ok()) return damaged(read.message());
  std::string* out = t->data<std::string>();
  const int64_t n = t->NumElements();
  if (n == 0 && e.size == 0) return Status::OK();  // no strings, and no checksum of their lengths
  std::vector<uint64_t> lengths(static_cast<size_t>(n));
  size_t pos = 0;
  uint32_t crc = 0;
  for (uint64_t& length : lengths) {
    length = 0;
    bool done = false;
    for (int shift = 0; shift < 64 && pos < bytes.size() && !done; shift += 7) {
      const auto byte = static_cast<uint8_t>(bytes[pos++]);
      length |= static_cast<uint64_t>(byte & 0x7f) << shift;
      done = (byte & 0x80) == 0;
    }
    if (!done) return damaged("has a damaged length");
    crc = ExtendWithLength(crc, length);
  }
  uint32_t lengths_crc;
  if (bytes.size() - pos < sizeof lengths_crc) return damaged("ends inside its lengths' checksum");
  std::memcpy(&lengths_crc, bytes.data() + pos, sizeof lengths_crc);
  if (crc32c::Unmask(lengths_crc) != crc) return damaged("fails its lengths' checksum");
  crc = crc32c::Extend(crc, bytes.data() + pos, sizeof lengths_crc);
  pos += sizeof lengths_crc;
  for (int64_t i = 0; i < n; ++i) {
    if (lengths[i] > bytes.size() - pos) return damaged("has a string longer than its bytes");
    out[i].assign(bytes, pos, lengths[i]);
    crc = crc32c::Extend(crc, bytes.data() + pos, lengths[i]);
    pos += lengths[i];
  }
  if (pos != bytes.size()) return damaged("has ", bytes.size() - pos, " bytes past its last string");
  if (crc != e.crc) return damaged("fails its checksum");
  return Status::OK();
}

Status MergeBundles(const std::vector<std::string>& prefixes, const std::string& merged_prefix,
                    bool delete_old_dirs) {
  if (prefixes.empty()) return errors::InvalidArgument("MergeV2Checkpoints needs at least one checkpoint");
  // Everything is read and checked before anything moves.
  std::vector<std::unique_ptr<BundleReader>> readers;
  std::map<std::string, std::string> entries;  // name -> serialized entry, shard renumbered
  int total_shards = 0;
  for (const std::string& prefix : prefixes) {
    ASSIGN_OR_RETURN(auto r, BundleReader::Open(prefix));
    for (size_t i = 0; i < r->entries_.size(); ++i) {
      const std::string& name = r->entries_[i].name;
      if (entries.count(name) != 0) {
        return errors::InvalidArgument("Tensor '", name, "' is in two of the checkpoints merged into '",
                                       merged_prefix, "'");
      }
      pb::BundleEntryProto e;
      e.ParseFromString(r->serialized_[i]);  // Open parsed it already
      e.set_shard_id(e.shard_id() + total_shards);
      entries[name] = e.SerializeAsString();
    }
    total_shards += r->num_shards();
    readers.push_back(std::move(r));
  }
  if (total_shards > kMaxShards) return errors::InvalidArgument("Merging makes ", total_shards, " data files");
  int next = 0;
  for (const auto& r : readers) {
    for (int i = 0; i < r->num_shards(); ++i, ++next) {
      const std::string from = BundleDataFile(r->prefix(), i, r->num_shards());
      const std::string to = BundleDataFile(merged_prefix, next, total_shards);
      if (std::rename(from.c_str(), to.c_str()) != 0) return FileError(errno, "rename", "checkpoint data", from);
    }
  }
  pb::BundleHeaderProto header;
  header.ParseFromString(readers[0]->header_);
  header.set_num_shards(total_shards);
  SstableBuilder table;
  RETURN_IF_ERROR(table.Add("", header.SerializeAsString()));
  for (const auto& [name, entry] : entries) RETURN_IF_ERROR(table.Add(name, entry));
  RETURN_IF_ERROR(WriteFileAtomically(BundleIndexFile(merged_prefix), table.Finish(), "checkpoint index"));
  const std::filesystem::path merged_dir = std::filesystem::path(merged_prefix).parent_path();
  for (const auto& r : readers) {
    if (r->prefix() != merged_prefix) ::unlink(BundleIndexFile(r->prefix()).c_str());
    const std::filesystem::path dir = std::filesystem::path(r->prefix()).parent_path();
    std::error_code ignored;
    if (delete_old_dirs && dir != merged_dir && std::filesystem::is_empty(dir, ignored)) {
      std::filesystem::remove(dir, ignored);
    }
  }
  return Status::OK();
}

}  // namespace tessera
