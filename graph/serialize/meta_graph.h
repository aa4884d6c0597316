// TensorFlow's MetaGraphDef as a TF1 Saver writes it beside a checkpoint (PREFIX.meta) and
// tf.train.import_meta_graph reads it: the graph, the saver's node names, and the variables
// by their nodes (the "variables" and "trainable_variables" collections of VariableDefs).
//
//   MetaGraph meta{.graph_def = bytes, .saver = SaverNames{...}, .variables = {...}};
//   ASSIGN_OR_RETURN(std::string data, SerializeMetaGraph(meta));
//   ASSIGN_OR_RETURN(MetaGraph back, ParseMetaGraph(data, "model.meta"));
//
// Pure functions of their arguments: any may be called concurrently.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/platform/status.h"

namespace tessera {

// A reference variable's nodes (TensorFlow's VariableDef).
struct MetaGraphVariable {
  std::string variable_name;       // "w:0"
  std::string initializer_name;    // "w/Assign"
  std::string snapshot_name;       // "w/read:0"
  std::string initial_value_name;  // "w/initial_value:0"
  bool trainable = true;
};

// A TF1 Saver's nodes (TensorFlow's SaverDef).
struct SaverNames {
  std::string filename_tensor_name;  // "save/Const:0"
  std::string save_tensor_name;      // "save/control_dependency:0"
  std::string restore_op_name;       // "save/restore_all"
  int max_to_keep = 5;
};

struct MetaGraph {
  std::string graph_def;  // a serialized GraphDef
  std::optional<SaverNames> saver;
  std::vector<MetaGraphVariable> variables;  // every variable; trainable ones also collected as such
};

StatusOr<std::string> SerializeMetaGraph(const MetaGraph& meta);
// Why the bytes of a MetaGraphDef do not parse, by the first of its fields that does not
// ("its saver_def at byte offset 12 does not parse", "field 2 at byte offset 3 is
// truncated"), offsets counted from `base` where the bytes sit inside a larger message (a
// SavedModel's); empty where every field parses on its own.
std::string MetaGraphDamage(std::string_view bytes, size_t base = 0);
// With `clear_devices`, the graph's nodes lose their device requests (import_meta_graph's
// clear_devices, for a graph saved on other devices). DataLoss naming `what` (the file) and
// the byte offset where the bytes stop being a MetaGraphDef; InvalidArgument for a variable
// in "trainable_variables" and not in "variables".
StatusOr<MetaGraph> ParseMetaGraph(std::string_view data, std::string_view what, bool clear_devices = false);

}  // namespace tessera
