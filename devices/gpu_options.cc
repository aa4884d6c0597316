#include "devices/gpu_options.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <string_view>

namespace tessera {

StatusOr<std::vector<int>> ParseVisibleDevices(const std::string& list) {
  std::vector<int> indices;
  std::set<int64_t> seen;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view item = std::string_view(list).substr(start, comma - start);
    int64_t index = -1;
    auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (item.empty() || error != std::errc() || end != item.data() + item.size() || index < 0 || index > 1024) {
      return errors::InvalidArgument("gpu_options.visible_device_list '", Excerpt(list),
                                     "' must be GPU indices separated by commas, like \"1,0\"");
    }
    if (!seen.insert(index).second) {
      return errors::InvalidArgument("gpu_options.visible_device_list '", Excerpt(list), "' names GPU ", index,
                                     " twice");
    }
    indices.push_back(static_cast<int>(index));
    start = comma + 1;
  }
  return indices;
}

StatusOr<std::vector<int>> GpuOptions::VisibleDevices() const {
  if (visible_device_list.empty()) return std::vector<int>{};
  return ParseVisibleDevices(visible_device_list);
}

}  // namespace tessera
