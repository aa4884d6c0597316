// The command line's SavedModel commands (saved_model/saved_model.h):
//   tessera run DIR [--tag serve[,TAG]] [--signature serving_default] [--feed KEY=JSON]...
//               [--fetch KEY[,KEY]] [--config CONFIG.json]
//       runs a signature by its input and output keys (every output when no --fetch) and
//       prints them as `tessera run` prints tensors, keyed by output key;
//   tessera inspect DIR
//       every tag set and signature with its inputs and outputs (key, dtype, shape, tensor),
//       as `saved_model_cli show --all` prints them.
// Each returns the process's exit code: 0, 1 for a failure, 2 for bad usage.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera {

int RunSavedModelCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int InspectSavedModelCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tessera
