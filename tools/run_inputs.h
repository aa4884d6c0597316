// What the run commands read beside the graph or SavedModel: a --feed's value (a file, or
// inline JSON starting with '{') and a --config file. Errors name the feed or the file.
// Thread-safe.
#pragma once

#include <string>

#include "graph/tensor.h"
#include "runtime/session_options.h"

namespace tessera {

StatusOr<Tensor> ReadFeedValue(const std::string& name, const std::string& source);
StatusOr<SessionConfig> ReadSessionConfigFile(const std::string& path);

}  // namespace tessera
