// Saver: tf.train.Saver for graphs built with Scope. It adds the ops TensorFlow's sharded
// Saver adds (SaveV2 under a temporary prefix, MergeV2Checkpoints into place, RestoreV2), so
// that a checkpoint is TensorFlow's format (graph/serialize/tensor_bundle.h: PATH.index and
// PATH.data-00000-of-00001), which tf.train.load_checkpoint reads; a checkpoint in Tessera's
// earlier format (one file at PATH, kernels/util/checkpoint_file.h) still restores.
//
//   StatusOr<Saver> saver = Saver::Create(root, {{"w", {w}}, {"b", {b}}});
//   // ... a session on root's graph ...
//   Status s = saver->Save(*session, "/tmp/model.ckpt");
//   s = saver->Restore(*other_session, "/tmp/model.ckpt");   // same graph, new session
//
// A name may stand for several copies of one variable (mirrored training's, one per
// device): the first copy is saved and every copy restored. Saving writes a temporary bundle
// and moves it into place, so a failed save leaves the previous checkpoint whole. A
// checkpoint tf.train.Checkpoint wrote restores too: its tensors are keyed by their owners'
// path, and a name it lacks is found by the name its variable had when saved (the object
// graph stored with it says which), as TensorFlow 1's Saver restores one.
// Create builds graph nodes (one thread per graph, like every builder); Save and Restore
// are Session::Run calls and may run concurrently as Run may.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/builder/ops.h"
#include "runtime/session.h"

namespace tessera {

class Saver {
 public:
  // InvalidArgument for no variables, a name without copies, or copies that differ in
  // dtype.
  static StatusOr<Saver> Create(const Scope& scope, const std::map<std::string, std::vector<Output>>& variables);

  Status Save(Session& session, const std::string& path) const;
  // Errors name the checkpoint and the tensor (or its shape check, save/NAME/shape_check):
  // NotFound, DataLoss for a damaged file, InvalidArgument for a dtype or shape that differs
  // from the variable's. The variables keep their values when any tensor fails.
  Status Restore(Session& session, const std::string& path) const;

  // Whether a checkpoint is at `path`: a bundle (PATH.index) or a file of the earlier format.
  static bool CheckpointExists(const std::string& path);

  // The nodes behind Save and Restore, to run by hand: feed the path to filename_tensor,
  // then run save_op or restore_op as a target.
  const std::string& filename_tensor() const { return filename_; }
  const std::string& save_op() const { return save_; }
  const std::string& restore_op() const { return restore_; }

 private:
  std::string filename_, save_, restore_;
  std::string tensor_names_;       // the names RestoreV2 reads, fed mapped for a tf.train.Checkpoint
  std::vector<std::string> names_;  // as saved
};

}  // namespace tessera
