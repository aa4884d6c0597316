// TensorFlow's SavedModels (a directory of saved_model.pb, variables/ and assets/), loaded
// into a Session as tensorflow/cc/saved_model/loader.cc loads them: the MetaGraph whose tags
// are the ones asked for, its graph imported (calls into its function library inlined, TF2
// control flow lowered: graph/serialize/tensorflow_functions.h), the variables restored by
// running the graph's own saver (TF1's save/restore_all, TF2's traced restore function) on
// variables/variables, then its init op (`__saved_model_init_op`, `main_op` or
// `legacy_init_op`), with each asset's path fed where the graph reads it.
//
//   ASSIGN_OR_RETURN(auto model, LoadSavedModel("/models/resnet", {"serve"}));
//   std::vector<Tensor> out;
//   RETURN_IF_ERROR(model->Run("serving_default", {{"input_1", images}}, {"predictions"}, &out));
//
// Errors name the directory and what is wrong: a tag set or signature that is not there
// lists those that are (NotFound); a saved_model.pb that does not parse names the byte
// offset of the part that does not (DataLoss); a damaged variables/ is the checkpoint
// reader's DataLoss. Load never crashes on a hostile directory. A loaded model's Run may be
// called from any number of threads at once, as Session::Run may.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/session.h"

namespace tessera {

// A signature's input or output: its key, the graph tensor behind it, its dtype and shape
// (unknown dimensions -1; unknown rank where the SavedModel gives none).
struct SignatureTensor {
  std::string key;
  std::string tensor;
  DataType dtype = DataType::kInvalid;
  std::string tf_dtype;  // TensorFlow's name, also for a dtype Tessera lacks ("DT_INT8")
  TensorShape shape;
};

struct SignatureInfo {
  std::string key;
  std::string method_name;
  std::vector<SignatureTensor> inputs, outputs;  // sorted by key
};

struct MetaGraphInfo {
  std::set<std::string> tags;
  std::vector<SignatureInfo> signatures;  // sorted by key; the init op's is left out
};

// Every MetaGraph of the SavedModel in `dir`, without loading its graph, for
// `tessera inspect` (as `saved_model_cli show --all`).
StatusOr<std::vector<MetaGraphInfo>> InspectSavedModel(const std::string& dir);

struct LoadOptions {
  // Once restored, the signatures' graph is frozen (runtime/freeze.h): each variable it only
  // reads becomes a constant holding its value, and the bundle's session runs that graph
  // alone, so that constant folding and the remapper fold normalisations into the
  // convolutions before them and filters are packed once, as ONNX converters do ahead of
  // time. A graph that updates a variable, or hands a variable's handle on where a constant
  // cannot stand in for it (into a loop, as Keras's LSTM and GRU do), is kept as it is.
  // Off: the session holds the variables, for a caller that runs more than signatures.
  bool freeze_variables = true;
};

// What loading one MetaGraph takes, read from the SavedModel without running anything: its
// graph (functions inlined, TF2 control flow lowered), the saver's restore op and the tensor
// its checkpoint path is fed to, the init op, and each asset's path to feed. LoadSavedModel
// runs it in a session of its own; the Python package imports the graph into the caller's
// (tf.compat.v1.saved_model.load). Errors are LoadSavedModel's.
struct SavedModelPlan {
  MetaGraphInfo info;
  GraphSpec graph;
  std::string restore_op;       // an op name; empty where there are no variables to restore
  std::string filename_tensor;  // fed `checkpoint` to restore
  std::string checkpoint;       // DIR/variables/variables
  std::string init_op;          // an op name, or empty
  std::vector<std::pair<std::string, Tensor>> asset_feeds;
};
StatusOr<SavedModelPlan> PlanSavedModelLoad(const std::string& dir, const std::set<std::string>& tags);

class SavedModelBundle {
 public:
  Session& session() const { return *session_; }
  const MetaGraphInfo& meta_graph() const { return info_; }
  // NotFound listing the signatures there are.
  StatusOr<const SignatureInfo*> Signature(const std::string& key) const;
  // Feeds `inputs` by the signature's input keys and fetches `output_keys` (every output, in
  // key order, when empty). InvalidArgument for an unknown or missing key, or a feed whose
  // dtype differs from the signature's, naming the key.
  Status Run(const std::string& signature, const std::vector<std::pair<std::string, Tensor>>& inputs,
             const std::vector<std::string>& output_keys, std::vector<Tensor>* outputs) const;

 private:
  friend StatusOr<std::unique_ptr<SavedModelBundle>> LoadSavedModel(const std::string&, const std::set<std::string>&,
                                                                    const SessionConfig&, const LoadOptions&);
  std::string dir_;
  MetaGraphInfo info_;
  std::unique_ptr<Session> session_;
};

StatusOr<std::unique_ptr<SavedModelBundle>> LoadSavedModel(const std::string& dir, const std::set<std::string>& tags,
                                                           const SessionConfig& config = SessionConfig(),
                                                           const LoadOptions& options = LoadOptions());

}  // namespace tessera
