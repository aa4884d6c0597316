// Host names and socket addresses as text: brackets off an IPv6 host, and addresses of each
// family (an IPv4-mapped IPv6 one as IPv4).
#include "graph/platform/socket_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/un.h>

namespace tessera {
namespace {

TEST(SocketAddressTest, BracketsComeOffAnIPv6HostOnly) {
  EXPECT_EQ(Unbracketed("[::1]"), "::1");
  EXPECT_EQ(Unbracketed("[2001:db8::5]"), "2001:db8::5");
  EXPECT_EQ(Unbracketed("198.18.0.2"), "198.18.0.2");
  EXPECT_EQ(Unbracketed("host-a"), "host-a");
  EXPECT_EQ(Unbracketed("[unclosed"), "[unclosed");
  EXPECT_EQ(Unbracketed(""), "");
}

sockaddr_storage Inet6(const char* text) {
  sockaddr_storage s{};
  auto* a = reinterpret_cast<sockaddr_in6*>(&s);
  a->sin6_family = AF_INET6;
  EXPECT_EQ(inet_pton(AF_INET6, text, &a->sin6_addr), 1) << text;
  return s;
}

TEST(SocketAddressTest, AddressesOfEachFamilyAsText) {
  sockaddr_storage v4{};
  auto* a = reinterpret_cast<sockaddr_in*>(&v4);
  a->sin_family = AF_INET;
  ASSERT_EQ(inet_pton(AF_INET, "198.18.0.3", &a->sin_addr), 1);
  EXPECT_EQ(AddressText(v4), "198.18.0.3");
  EXPECT_EQ(AddressText(Inet6("2001:db8::5")), "2001:db8::5");
  EXPECT_EQ(AddressText(Inet6("::ffff:10.0.0.2")), "10.0.0.2");
  sockaddr_storage unix_socket{};
  unix_socket.ss_family = AF_UNIX;
  EXPECT_EQ(AddressText(unix_socket), "");
}

}  // namespace
}  // namespace tessera
