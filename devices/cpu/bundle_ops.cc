// TensorFlow's checkpoint ops over tensor bundles (graph/serialize/tensor_bundle.h): SaveV2,
// RestoreV2 (which also reads Tessera's own checkpoint files, kernels/util/
// checkpoint_file.h, so that checkpoints saved before the bundle format still restore),
// MergeV2Checkpoints, and the name ops TensorFlow's savers put beside them: ShardedFilename and
// ShardedFilespec (StringJoin is in string_ops.cc).
#include <sys/stat.h>

#include <cstdio>

#include "devices/cpu/cpu_kernels.h"
#include "graph/serialize/tensor_bundle.h"
#include "kernels/util/checkpoint_file.h"

namespace tessera::cpu {
namespace {

StatusOr<std::string> ScalarString(const Tensor& t, std::string_view what) {
  if (t.dtype() != DataType::kString || t.rank() != 0) {
    return errors::InvalidArgument(what, " must be a string scalar, got ", DataTypeName(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  return t.data<std::string>()[0];
}

StatusOr<std::vector<std::string>> Strings(const Tensor& t, int64_t expected, std::string_view what) {
  if (t.dtype() != DataType::kString || t.rank() != 1 || t.NumElements() != expected) {
    return errors::InvalidArgument(what, " must be a string vector of ", expected, " entries, got ",
                                   DataTypeName(t.dtype()), " ", t.shape().DebugString());
  }
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + expected);
}

// Slices of partitioned variables ("4 6 0,2:-") are not read or written.
Status WholeTensors(const std::vector<std::string>& shape_and_slices, const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (!shape_and_slices[i].empty()) {
      return errors::Unimplemented("Tensor '", names[i], "': slice '", shape_and_slices[i],
                                   "' of a partitioned variable; Tessera saves and restores whole tensors");
    }
  }
  return Status::OK();
}

class SaveV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<std::string> prefix = ScalarString(ctx->input(0), "prefix");
    OP_REQUIRES_OK(ctx, prefix.status());
    const int n = ctx->num_inputs() - 3;
    StatusOr<std::vector<std::string>> names = Strings(ctx->input(1), n, "tensor_names");
    OP_REQUIRES_OK(ctx, names.status());
    StatusOr<std::vector<std::string>> slices = Strings(ctx->input(2), n, "shape_and_slices");
    OP_REQUIRES_OK(ctx, slices.status());
    OP_REQUIRES_OK(ctx, WholeTensors(*slices, *names));
    StatusOr<std::unique_ptr<BundleWriter>> writer = BundleWriter::Open(*prefix);
    OP_REQUIRES_OK(ctx, writer.status());
    for (int i = 0; i < n; ++i) OP_REQUIRES_OK(ctx, (*writer)->Add((*names)[i], ctx->input(3 + i)));
    OP_REQUIRES_OK(ctx, (*writer)->Finish());
  }
};

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Each restored tensor must have the dtype the op declares for it.
class RestoreV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    StatusOr<std::string> prefix = ScalarString(ctx->input(0), "prefix");
    OP_REQUIRES_OK(ctx, prefix.status());
    const int n = ctx->num_outputs();
    StatusOr<std::vector<std::string>> names = Strings(ctx->input(1), n, "tensor_names");
    OP_REQUIRES_OK(ctx, names.status());
    StatusOr<std::vector<std::string>> slices = Strings(ctx->input(2), n, "shape_and_slices");
    OP_REQUIRES_OK(ctx, slices.status());
    OP_REQUIRES_OK(ctx, WholeTensors(*slices, *names));
    // A checkpoint of Tessera's earlier format is one file at the prefix.
    if (!Exists(BundleIndexFile(*prefix)) && Exists(*prefix)) {
      Restore(ctx, CheckpointReader::Open(*prefix), *prefix, *names);
    } else {
      Restore(ctx, BundleReader::Open(*prefix), *prefix, *names);
    }
  }

 private:
  // Every entry's dtype is checked before any data is read.
  template <typename Reader>
  static void Restore(OpKernelContext* ctx, StatusOr<std::unique_ptr<Reader>> reader, const std::string& prefix,
                      const std::vector<std::string>& names) {
    OP_REQUIRES_OK(ctx, reader.status());
    for (size_t i = 0; i < names.size(); ++i) {
      auto entry = (*reader)->Find(names[i]);
      OP_REQUIRES_OK(ctx, entry.status());
      const DataType want = ctx->op_kernel().output_type(static_cast<int>(i));
      OP_REQUIRES(ctx, entry->dtype == want,
                  errors::InvalidArgument("Tensor '", names[i], "' in checkpoint '", prefix, "' is ",
                                          DataTypeName(entry->dtype), ", expected ", DataTypeName(want)));
    }
    for (size_t i = 0; i < names.size(); ++i) {
      StatusOr<Tensor> t = (*reader)->Read(names[i], ctx->device()->allocator());
      OP_REQUIRES_OK(ctx, t.status());
      ctx->set_output(static_cast<int>(i), std::move(*t));
    }
  }
};

class MergeV2CheckpointsOp : public OpKernel {
 public:
  explicit MergeV2CheckpointsOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("delete_old_dirs", &delete_old_dirs_);
    if (s.ok()) s = c->GetAttr("allow_missing_files", &allow_missing_files_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, in.dtype() == DataType::kString && in.rank() <= 1,
                errors::InvalidArgument("checkpoint_prefixes must be a string vector, got ",
                                        DataTypeName(in.dtype()), " ", in.shape().DebugString()));
    StatusOr<std::string> destination = ScalarString(ctx->input(1), "destination_prefix");
    OP_REQUIRES_OK(ctx, destination.status());
    std::vector<std::string> prefixes;
    for (int64_t i = 0; i < in.NumElements(); ++i) {
      const std::string& p = in.data<std::string>()[i];
      if (allow_missing_files_ && !Exists(BundleIndexFile(p))) continue;
      prefixes.push_back(p);
    }
    OP_REQUIRES_OK(ctx, MergeBundles(prefixes, *destination, delete_old_dirs_));
  }

 private:
  bool delete_old_dirs_ = true;
  bool allow_missing_files_ = false;
};

StatusOr<int32_t> ScalarInt(const Tensor& t, std::string_view what) {
  if (t.dtype() != DataType::kInt32 || t.rank() != 0) {
    return errors::InvalidArgument(what, " must be an int32 scalar, got ", DataTypeName(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  return t.data<int32_t>()[0];
}

// BASENAME-00003-of-00008, as TensorFlow's ShardedFilename; ShardedFilespec has ????? for the
// shard.
class ShardedFilenameOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const bool spec = type_string() == "ShardedFilespec";
    StatusOr<std::string> base = ScalarString(ctx->input(0), "basename");
    OP_REQUIRES_OK(ctx, base.status());
    StatusOr<int32_t> shard = spec ? StatusOr<int32_t>(0) : ScalarInt(ctx->input(1), "shard");
    OP_REQUIRES_OK(ctx, shard.status());
    StatusOr<int32_t> num_shards = ScalarInt(ctx->input(spec ? 1 : 2), "num_shards");
    OP_REQUIRES_OK(ctx, num_shards.status());
    OP_REQUIRES(ctx, *num_shards >= 1 && *shard >= 0 && *shard < *num_shards,
                errors::InvalidArgument("shard ", *shard, " of ", *num_shards, " shards"));
    char suffix[40];
    if (spec) {
      std::snprintf(suffix, sizeof suffix, "-\?\?\?\?\?-of-%05d", *num_shards);
    } else {
      std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d", *shard, *num_shards);
    }
    ctx->set_output(0, Tensor::Scalar(*base + suffix));
  }
};

}  // namespace

void RegisterBundleKernels(KernelRegistry& r) {
  r.Register<SaveV2Op>(KernelDefBuilder("SaveV2").Device(kDeviceCpu));
  r.Register<RestoreV2Op>(KernelDefBuilder("RestoreV2").Device(kDeviceCpu));
  r.Register<MergeV2CheckpointsOp>(KernelDefBuilder("MergeV2Checkpoints").Device(kDeviceCpu));
  r.Register<ShardedFilenameOp>(KernelDefBuilder("ShardedFilename").Device(kDeviceCpu));
  r.Register<ShardedFilenameOp>(KernelDefBuilder("ShardedFilespec").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
