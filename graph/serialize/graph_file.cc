#include "graph/serialize/graph_file.h"

#include <optional>

#include "graph/platform/file_io.h"
#include "graph/serialize/graph_json.h"
#include "graph/serialize/tensorflow_graph.h"

namespace tessera {
namespace {

std::optional<GraphFileFormat> FormatOfExtension(const std::string& path) {
  auto ends = [&](std::string_view ext) { return path.size() > ext.size() && path.ends_with(ext); };
  if (ends(".json")) return GraphFileFormat::kJson;
  if (ends(".pb")) return GraphFileFormat::kBinaryGraphDef;
  if (ends(".pbtxt") || ends(".pbtext")) return GraphFileFormat::kTextGraphDef;
  return std::nullopt;
}

GraphFileFormat SniffFormat(std::string_view bytes) {
  size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && bytes[first] == '{') return GraphFileFormat::kJson;
  return SniffTensorFlowFormat(bytes) == TensorFlowFormat::kText ? GraphFileFormat::kTextGraphDef
                                                                 : GraphFileFormat::kBinaryGraphDef;
}

}  // namespace

StatusOr<GraphSpec> ReadGraphFile(const std::string& path, const OpRegistry* ops) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path, "graph"));
  GraphFileFormat format = FormatOfExtension(path).value_or(SniffFormat(bytes));
  StatusOr<GraphSpec> def = errors::Internal("unreachable");
  if (format == GraphFileFormat::kJson) {
    def = GraphSpecFromJson(bytes, ops);
  } else {
    GraphDefImportOptions options;
    options.ops = ops;
    def = GraphSpecFromTensorFlow(
        bytes, format == GraphFileFormat::kTextGraphDef ? TensorFlowFormat::kText : TensorFlowFormat::kBinary, options);
  }
  if (!def.ok()) return def.status().WithSuffix(StrCat(" (in '", path, "')"));
  return def;
}

Status WriteGraphFile(const std::string& path, const GraphSpec& def) {
  std::optional<GraphFileFormat> format = FormatOfExtension(path);
  if (!format) return errors::InvalidArgument("'", path, "' does not end in .json, .pb or .pbtxt");
  std::string bytes;
  if (*format == GraphFileFormat::kJson) {
    bytes = GraphSpecToJson(def);
  } else {
    StatusOr<std::string> encoded = GraphSpecToTensorFlow(
        def, *format == GraphFileFormat::kTextGraphDef ? TensorFlowFormat::kText : TensorFlowFormat::kBinary);
    if (!encoded.ok()) return encoded.status().WithSuffix(StrCat(" (writing '", path, "')"));
    bytes = std::move(*encoded);
  }
  return WriteFileAtomically(path, bytes, "graph");
}

}  // namespace tessera
