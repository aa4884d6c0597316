#include "graph/platform/socket_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace tessera {

std::string Unbracketed(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return std::string(host);
}

std::string AddressText(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr, text, sizeof text);
  } else if (address.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a)) ::inet_ntop(AF_INET, &a.s6_addr[12], text, sizeof text);
    else ::inet_ntop(AF_INET6, &a, text, sizeof text);
  }
  return text;
}

}  // namespace tessera
