#include "graph/platform/loopback.h"

namespace tessera {

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.") ||
         host.starts_with("::ffff:127.");
}

}  // namespace tessera
