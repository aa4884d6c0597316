// IsLoopbackHost: whether a host name or address names this machine's loopback
// ("localhost", 127.0.0.0/8, "::1" with or without brackets, IPv4-mapped 127.x). By name
// only: nothing is resolved. Thread-safe.
#pragma once

#include <string_view>

namespace tessera {

bool IsLoopbackHost(std::string_view host);

}  // namespace tessera
