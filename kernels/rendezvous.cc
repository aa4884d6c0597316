#include "kernels/rendezvous.h"

#include <charconv>

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

}  // namespace tessera
