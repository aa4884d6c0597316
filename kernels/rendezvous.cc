#include "kernels/rendezvous.h"

#include <charconv>
#include <vector>

namespace tessera {

std::string Rendezvous::CreateKey(std::string_view src_device, uint64_t src_incarnation,
                                  std::string_view dst_device, std::string_view tensor_name,
                                  std::string_view frame_and_iter) {
  char hex[17];
  auto [end, ec] = std::to_chars(hex, hex + sizeof(hex), src_incarnation, 16);
  std::string key;
  key.reserve(src_device.size() + dst_device.size() + tensor_name.size() + 32);
  key.append(src_device).append(";").append(hex, end).append(";").append(dst_device);
  key.append(";").append(tensor_name).append(";").append(frame_and_iter);
  return key;
}

StatusOr<Rendezvous::ParsedKey> Rendezvous::ParseKey(std::string_view key) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t semi = key.find(';', start);
    parts.push_back(key.substr(start, semi == std::string_view::npos ? semi : semi - start));
    if (semi == std::string_view::npos) break;
    start = semi + 1;
  }
  if (parts.size() != 5 || parts[0].empty() || parts[2].empty() || parts[3].empty()) {
    return errors::InvalidArgument("Invalid rendezvous key '", key,
                                   "': want src_device;src_incarnation;dst_device;tensor_name;frame_and_iter");
  }
  ParsedKey p;
  auto [ptr, ec] = std::from_chars(parts[1].data(), parts[1].data() + parts[1].size(), p.src_incarnation, 16);
  if (ec != std::errc() || ptr != parts[1].data() + parts[1].size()) {
    return errors::InvalidArgument("Invalid rendezvous key '", key, "': bad incarnation '", parts[1], "'");
  }
  p.src_device = parts[0];
  p.dst_device = parts[2];
  p.tensor_name = parts[3];
  p.frame_and_iter = parts[4];
  return p;
}

}  // namespace tessera
