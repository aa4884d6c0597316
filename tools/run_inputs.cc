#include "tools/run_inputs.h"

#include "graph/platform/file_io.h"
#include "graph/serialize/graph_json.h"

namespace tessera {

StatusOr<Tensor> ReadFeedValue(const std::string& name, const std::string& source) {
  std::string text = source;
  if (!source.starts_with("{")) {
    ASSIGN_OR_RETURN(text, ReadFileToString(source, StrCat("the feed for '", name, "'")));
  }
  StatusOr<Tensor> t = TensorFromJsonText(text);
  if (!t.ok()) return t.status().WithSuffix(StrCat(" (feed '", name, "')"));
  return t;
}

StatusOr<SessionConfig> ReadSessionConfigFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "session config"));
  StatusOr<SessionConfig> parsed = SessionConfig::FromJson(text);
  if (!parsed.ok()) return parsed.status().WithSuffix(StrCat(" (in '", path, "')"));
  return parsed;
}

}  // namespace tessera
