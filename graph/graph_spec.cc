#include "graph/graph_spec.h"

#include <charconv>

namespace tessera {

StatusOr<TensorId> ParseTensorName(std::string_view name) {
  if (name.starts_with("^")) {
    std::string_view node = name.substr(1);
    if (node.empty() || node.find(':') != std::string_view::npos) {
      return errors::InvalidArgument("Malformed control input '", name, "'");
    }
    return TensorId{node, -1};
  }
  size_t colon = name.rfind(':');
  if (colon == std::string_view::npos) {
    if (name.empty()) return errors::InvalidArgument("Empty tensor name");
    return TensorId{name, 0};
  }
  std::string_view node = name.substr(0, colon);
  std::string_view port = name.substr(colon + 1);
  int index = -1;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), index);
  if (node.empty() || port.empty() || ec != std::errc() || ptr != port.data() + port.size() ||
      index < 0) {
    return errors::InvalidArgument("Malformed tensor name '", name,
                                   "': expected 'node' or 'node:output_index'");
  }
  return TensorId{node, index};
}

}  // namespace tessera
