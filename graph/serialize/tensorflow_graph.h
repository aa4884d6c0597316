// TensorFlow's GraphDef files (.pb binary, .pbtxt text) read into and written from Tessera's
// GraphSpec, through protobuf and our copy of TensorFlow's wire format
// (graph/protos/tensorflow_graph.proto).
//
//   StatusOr<std::unique_ptr<Graph>> g = ImportGraphDefFile("frozen.pb");
//   StatusOr<GraphSpec> def = GraphSpecFromTensorFlow(bytes, TensorFlowFormat::kBinary);
//
// Reading first inlines every call into the GraphDef's function library and lowers TF2's If
// and While to v1 control flow (graph/serialize/tensorflow_functions.h), then maps each
// node's attrs by the type Tessera's op declares for them. Attrs the op
// does not declare (TensorFlow's `_output_shapes`, `use_cudnn_on_gpu`, ...) are dropped
// with one log line per op and attr; `_class = ["loc:@x"]` becomes colocation with x. An
// unknown op is NotFound naming the node; an attr of the wrong type, a tensor whose values
// do not fit its shape, a dtype Tessera lacks, a call that does not fit its function and
// every other malformed input are InvalidArgument (Unimplemented for what Tessera does
// not run) naming the node and attr; a binary file that does not parse names the byte
// offset of the first node or field that does not, a text file the line and column.
// Every function here is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "graph/graph.h"
#include "graph/graph_spec.h"
#include "graph/op_registry.h"

namespace tessera {

enum class TensorFlowFormat { kBinary, kText };

struct GraphDefImportOptions {
  const OpRegistry* ops = OpRegistry::Global();
  // A tensor whose proto lists fewer values than its shape holds repeats the last one, as
  // TensorFlow's do; this caps what such a tensor may grow to, so a few bytes cannot ask for
  // gigabytes.
  int64_t max_expanded_tensor_bytes = int64_t{1} << 30;
};

StatusOr<GraphSpec> GraphSpecFromTensorFlow(std::string_view bytes, TensorFlowFormat format,
                                          const GraphDefImportOptions& options = {});
namespace tfgraph {
class GraphDef;
}
// The same from a GraphDef already parsed: a SavedModel's MetaGraphDef holds one.
StatusOr<GraphSpec> GraphSpecFromTensorFlow(const tfgraph::GraphDef& graph, const GraphDefImportOptions& options = {});
// Unimplemented for a node holding a function (a dataset's `f`): only JSON holds those.
StatusOr<std::string> GraphSpecToTensorFlow(const GraphSpec& def, TensorFlowFormat format);

// The names before the remodel; kept for one release.
[[deprecated("GraphDefFromTensorFlow is GraphSpecFromTensorFlow")]] inline StatusOr<GraphSpec> GraphDefFromTensorFlow(
    std::string_view bytes, TensorFlowFormat format, const GraphDefImportOptions& options = {}) {
  return GraphSpecFromTensorFlow(bytes, format, options);
}
[[deprecated("GraphDefToTensorFlow is GraphSpecToTensorFlow")]] inline StatusOr<std::string> GraphDefToTensorFlow(
    const GraphSpec& def, TensorFlowFormat format) {
  return GraphSpecToTensorFlow(def, format);
}

// Binary or text, told apart by the bytes: a binary GraphDef starts with a field tag, text
// with a field name or comment.
TensorFlowFormat SniffTensorFlowFormat(std::string_view bytes);

// A validated Graph from GraphDef bytes (either format) or a file of them.
StatusOr<std::unique_ptr<Graph>> ImportGraphDef(std::string_view bytes, const GraphDefImportOptions& options = {});
StatusOr<std::unique_ptr<Graph>> ImportGraphDefFile(const std::string& path,
                                                    const GraphDefImportOptions& options = {});

}  // namespace tessera
