// Feeds arbitrary bytes to the SavedModel reader as a directory's saved_model.pb, and to
// the reader of TF1's PREFIX.meta (one MetaGraphDef): the SavedModel's
// inspection (tag sets, signatures, the parse error's byte offset) and the import of each
// MetaGraph's graph (function inlining, control-flow lowering, validation). Every input must
// give a result or a Status, never crash, trip a sanitizer or grow without bound. (Running
// the graphs is left out: a SavedModel may loop forever by design.)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "graph/graph.h"
#include "graph/protos/saved_model.pb.h"
#include "graph/serialize/meta_graph.h"
#include "graph/serialize/tensorflow_graph.h"
#include "saved_model/saved_model.h"
#include "tests/fuzz/fuzz_file.h"

namespace {

const std::string& Dir() {
  static const std::string dir = tessera::fuzz::ProcessTempDir();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FILE* f = std::fopen((Dir() + "/saved_model.pb").c_str(), "wb");
  if (f == nullptr) std::abort();
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  (void)tessera::InspectSavedModel(Dir());
  (void)tessera::ParseMetaGraph(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", true);
  tessera::tfgraph::SavedModel model;
  if (!model.ParseFromArray(data, static_cast<int>(size))) return 0;
  for (const auto& meta : model.meta_graphs()) {
    tessera::StatusOr<tessera::GraphSpec> spec =
        tessera::GraphSpecFromTensorFlow(meta.graph_def().SerializeAsString(), tessera::TensorFlowFormat::kBinary);
    if (spec.ok()) (void)tessera::Graph::FromSpec(*spec);
  }
  return 0;
}
