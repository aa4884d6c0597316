#include "training/saver.h"

#include <filesystem>
#include <random>

#include "graph/builder/op_builder.h"
#include "graph/serialize/tensor_bundle.h"

namespace tessera {
namespace {

// What TensorFlow's sharded savers add to the prefix for their temporary bundle; random per
// Saver, so that two Savers saving to one prefix at once do not share a folder.
std::string TempSuffix() {
  std::random_device rd;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%08x%08x", rd(), rd());
  return StrCat("_temp_", hex, "/part");
}

}  // namespace

StatusOr<Saver> Saver::Create(const Scope& scope, const std::map<std::string, std::vector<Output>>& variables) {
  if (variables.empty()) return errors::InvalidArgument("A Saver needs at least one variable");
  const Scope s = scope.NewSubScope("save");
  std::vector<std::string> names;
  std::vector<Input> saved;
  std::vector<DataType> dtypes;
  for (const auto& [name, copies] : variables) {
    if (copies.empty() || copies[0].node == nullptr) {
      return errors::InvalidArgument("Variable '", name, "' has no copies to save");
    }
    for (const Output& c : copies) {
      if (c.node == nullptr || c.type() != copies[0].type()) {
        return errors::InvalidArgument("The copies of variable '", name, "' differ in dtype");
      }
    }
    names.push_back(name);
    saved.push_back(copies[0]);
    dtypes.push_back(copies[0].type());
  }
  Saver saver;
  Output filename = ops::Placeholder(s.WithOpName("filename"), DataType::kString, TensorShape());
  Output tensor_names = ops::Const(s.WithOpName("tensor_names"), Tensor::FromVector(names));
  Output slices = ops::Const(s.WithOpName("shape_and_slices"),
                             Tensor::FromVector(std::vector<std::string>(names.size(), "")));
  // As TensorFlow's sharded saver: the bundle is written under a temporary prefix, then
  // moved into place by MergeV2Checkpoints, so that a failed save leaves the last checkpoint
  // as it was.
  Output temp = ops::Build(s.WithOpName("temp_prefix"), "StringJoin",
                           {filename, ops::Const(s, Tensor::Scalar(TempSuffix()))});
  const Output shard_index = ops::Const(s, Tensor::Scalar<int32_t>(0));
  const Output num_shards = ops::Const(s, Tensor::Scalar<int32_t>(1));
  Output shard = ops::Build(s.WithOpName("sharded_filename"), "ShardedFilename", {temp, shard_index, num_shards});
  std::vector<Input> save_inputs = {shard, tensor_names, slices};
  save_inputs.insert(save_inputs.end(), saved.begin(), saved.end());
  Output save = ops::Build(s.WithOpName("save_tensors"), "SaveV2", save_inputs, {{"dtypes", dtypes}});
  Output shards =
      ops::Reshape(s.WithControlDependencies({save.op()}), shard, ops::Const(s, Tensor::FromVector<int32_t>({1})));
  Output merge = ops::Build(s.WithOpName("merge_checkpoints"), "MergeV2Checkpoints", {shards, filename});

  std::vector<Output> restored = ops::AllOutputs(
      ops::Build(s.WithOpName("restore_tensors"), "RestoreV2", {filename, tensor_names, slices}, {{"dtypes", dtypes}}));
  // Every restored shape is checked before any variable is assigned: a checkpoint of another
  // model changes nothing.
  std::vector<Output> checked;
  std::vector<Operation> checks;
  size_t i = 0;
  for (const auto& [name, copies] : variables) {
    if (i >= restored.size()) break;
    checked.push_back(ops::Build(s.WithOpName(StrCat(name, "/shape_check")), "EnsureShape", {restored[i]},
                                 {{"shape", copies[0].node->output_shape(copies[0].index)}}));
    checks.push_back(checked.back().op());
    ++i;
  }
  Operation all_checked = ops::NoOp(s.WithOpName("shapes_checked").WithControlDependencies(checks));
  std::vector<Operation> assigns;
  i = 0;
  for (const auto& [name, copies] : variables) {
    for (size_t k = 0; k < copies.size() && i < checked.size(); ++k) {
      const Scope at = s.WithOpName(k == 0 ? name : StrCat(name, "_", k)).WithControlDependencies({all_checked});
      assigns.push_back(ops::Assign(at, copies[k], checked[i]).op());
    }
    ++i;
  }
  Operation restore_all = ops::NoOp(s.WithOpName("restore_all").WithControlDependencies(assigns));
  RETURN_IF_ERROR(scope.status());
  saver.filename_ = filename.name();
  saver.save_ = merge.node->name();
  saver.restore_ = restore_all.name();
  saver.tensor_names_ = tensor_names.name();
  saver.names_ = std::move(names);
  return saver;
}

bool Saver::CheckpointExists(const std::string& path) {
  std::error_code ignored;
  return std::filesystem::exists(path + ".index", ignored) || std::filesystem::is_regular_file(path, ignored);
}

Status Saver::Save(Session& session, const std::string& path) const {
  std::vector<Tensor> out;
  return session.Run({{filename_, Tensor::Scalar(path)}}, {}, {save_}, &out);
}

Status Saver::Restore(Session& session, const std::string& path) const {
  std::vector<std::pair<std::string, Tensor>> feeds = {{filename_, Tensor::Scalar(path)}};
  // tf.train.Checkpoint keys tensors by their owners' path: a name the checkpoint lacks is
  // looked up by the name its variable had when saved, as TensorFlow 1's Saver does.
  if (StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(path); reader.ok()) {
    ASSIGN_OR_RETURN(auto keys, ObjectGraphKeys(**reader));
    std::vector<std::string> names = names_;
    bool mapped = false;
    for (std::string& name : names) {
      auto key = keys.find(name);
      if (key != keys.end() && !(*reader)->Find(name).ok()) {
        name = key->second;
        mapped = true;
      }
    }
    if (mapped) feeds.emplace_back(tensor_names_, Tensor::FromVector(names));
  }
  std::vector<Tensor> out;
  return session.Run(feeds, {}, {restore_}, &out);
}

}  // namespace tessera
