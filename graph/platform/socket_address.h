// Host names and socket addresses as text, for the code that opens sockets of its own (the
// direct transport, the rank table, Gloo's members). Pure functions; thread-safe.
#pragma once

#include <sys/socket.h>

#include <string>
#include <string_view>

namespace tessera {

// `host` as getaddrinfo takes it: an IPv6 address without the brackets a "host:port" form
// puts round it ("[::1]" -> "::1"); any other host as it is.
std::string Unbracketed(std::string_view host);

// The IP address of `address` as text, an IPv4-mapped IPv6 one as IPv4 ("::ffff:10.0.0.2"
// -> "10.0.0.2"); empty for a family other than IPv4 and IPv6.
std::string AddressText(const sockaddr_storage& address);

}  // namespace tessera
