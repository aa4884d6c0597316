// TensorFlow's checkpoint format, the tensor bundle (tensorflow/core/util/tensor_bundle). A
// checkpoint PREFIX is two kinds of file:
//
//   PREFIX.index                 a table (graph/serialize/sstable.h): key "" holds a
//                                BundleHeaderProto, every other key is a tensor's name and
//                                holds its BundleEntryProto (dtype, shape, shard, offset,
//                                size, masked CRC-32C of its bytes)
//   PREFIX.data-00000-of-00001   the tensors' bytes: row-major and little-endian; a string
//                                tensor as its lengths (varints), a masked CRC-32C of them,
//                                then the strings
//
//   ASSIGN_OR_RETURN(auto w, BundleWriter::Open("/tmp/model/ckpt"));
//   RETURN_IF_ERROR(w->Add("dense/kernel", kernel));
//   RETURN_IF_ERROR(w->Finish());
//   ASSIGN_OR_RETURN(auto r, BundleReader::Open("/tmp/model/ckpt"));
//   ASSIGN_OR_RETURN(Tensor k, r->Read("dense/kernel", CpuAllocator()));
//
// Reading trusts nothing in the files: every entry's dtype, shape, shard and extent are
// checked when the index is opened, a tensor's bytes against its checksum when read; damage
// is DataLoss naming the file, the tensor and where. What Tessera cannot hold (a dtype it
// lacks, a partitioned variable's slices, a big-endian bundle) is Unimplemented naming the
// tensor, so the rest of the checkpoint can still be read. A reader is thread-safe; a
// writer is one thread's.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/allocator.h"
#include "graph/platform/file_io.h"
#include "graph/tensor.h"

namespace tessera {

std::string BundleIndexFile(const std::string& prefix);
// PREFIX.data-SSSSS-of-NNNNN
std::string BundleDataFile(const std::string& prefix, int shard, int num_shards);

// Writes one bundle of one shard, making the prefix's folder. Each file goes to a temporary
// file renamed into place by Finish, the data file first (so a crash between the two renames
// leaves the old index over new data: savers write to a new prefix and merge, as
// training/saver.h does); without a Finish no file is left behind.
class BundleWriter {
 public:
  static StatusOr<std::unique_ptr<BundleWriter>> Open(const std::string& prefix);
  // InvalidArgument for an empty or repeated name, or a variant or resource tensor.
  Status Add(const std::string& name, const Tensor& tensor);
  Status Finish();

 private:
  BundleWriter() = default;
  std::string prefix_;
  std::unique_ptr<AtomicFileWriter> data_;
  uint64_t offset_ = 0;
  std::map<std::string, std::string> entries_;  // name -> serialized BundleEntryProto
};

struct BundleEntry {
  std::string name;
  int tf_dtype = 0;  // TensorFlow's DataType enum value
  DataType dtype = DataType::kInvalid;  // kInvalid where Tessera has no such type
  TensorShape shape;
  int shard = 0;
  uint64_t offset = 0, size = 0;
  uint32_t crc = 0;  // unmasked
  bool sliced = false;  // a partitioned variable's whole, its slices stored apart
};

class BundleReader {
 public:
  // NotFound for a missing PREFIX.index; DataLoss for a damaged index or an entry that
  // points outside its data file (which is opened and sized here).
  static StatusOr<std::unique_ptr<BundleReader>> Open(const std::string& prefix);

  const std::string& prefix() const { return prefix_; }
  int num_shards() const { return static_cast<int>(shards_.size()); }
  // Every tensor, in name order.
  const std::vector<BundleEntry>& entries() const { return entries_; }
  // NotFound naming the tensor and the checkpoint.
  StatusOr<BundleEntry> Find(const std::string& name) const;
  StatusOr<Tensor> Read(const std::string& name, std::shared_ptr<Allocator> allocator) const;

 private:
  BundleReader() = default;
  Status ReadStrings(const BundleEntry& e, Tensor* t) const;
  std::string prefix_;
  std::vector<BundleEntry> entries_;
  std::map<std::string, size_t> by_name_;
  std::vector<std::unique_ptr<ReadableFile>> shards_;
  std::string header_;                   // the serialized BundleHeaderProto, for merging
  std::vector<std::string> serialized_;  // each entry's BundleEntryProto, parallel to entries_
  friend Status MergeBundles(const std::vector<std::string>& prefixes, const std::string& merged_prefix,
                             bool delete_old_dirs);
};

// For a checkpoint tf.train.Checkpoint wrote (object-based: its tensors are keyed by their
// owners' path, "model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE"), each variable's name when
// it was saved ("dense/kernel") and its key, from the object graph stored with it, as
// TensorFlow 1's Saver maps names when it restores such a checkpoint; empty for a name-based
// checkpoint. DataLoss naming the checkpoint for an object graph that does not parse.
StatusOr<std::map<std::string, std::string>> ObjectGraphKeys(const BundleReader& reader);

// TensorFlow's MergeV2Checkpoints: the bundles `prefixes` become one, `merged_prefix`, their
// data files renamed to its shards and one index written over them. A name in two bundles is
// InvalidArgument, before anything moves. With `delete_old_dirs`, each input's directory is
// removed once empty, when it is not the merged prefix's.
Status MergeBundles(const std::vector<std::string>& prefixes, const std::string& merged_prefix,
                    bool delete_old_dirs);

}  // namespace tessera
