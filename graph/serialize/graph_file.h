// Graph files in any of the forms Tessera reads, as a GraphSpec: its JSON (.json),
// TensorFlow's binary GraphDef (.pb) and TensorFlow's text GraphDef (.pbtxt). The extension
// decides; a file with another extension is recognised by its first bytes.
//
//   ASSIGN_OR_RETURN(GraphSpec def, ReadGraphFile("model.pb"));
//   RETURN_IF_ERROR(WriteGraphFile("model.json", def));
//
// Errors name the file. Both functions are thread-safe; writes are atomic (file_io.h).
#pragma once

#include <string>

#include "graph/graph_spec.h"
#include "graph/op_registry.h"

namespace tessera {

enum class GraphFileFormat { kJson, kBinaryGraphDef, kTextGraphDef };

StatusOr<GraphSpec> ReadGraphFile(const std::string& path, const OpRegistry* ops = OpRegistry::Global());
// The format comes from the extension; InvalidArgument for one that is none of the three.
Status WriteGraphFile(const std::string& path, const GraphSpec& def);

}  // namespace tessera
