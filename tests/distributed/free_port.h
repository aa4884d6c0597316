// An unused loopback port for a test's cluster: checked free by binding it, then released
// for the server under test to take. It comes from below the kernel's ephemeral range, where
// no outgoing connection (another test's client, say) can take it as its own port between
// the check and the server's bind.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <string>

namespace tessera::testing {

// Whether a listening socket could take `port` (0: any) on loopback now; the port it got.
inline int BindLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof addr;
  int bound = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    bound = ntohs(addr.sin_port);
  }
  if (fd >= 0) close(fd);
  return bound;
}

inline int FreePort() {
  constexpr int kLowest = 10000;
  // Ports this process already handed out, which their servers may not have bound yet: two
  // picks of one cluster spec once fell on the same port.
  static std::mutex mu;
  static std::set<int> given;
  std::lock_guard<std::mutex> lock(mu);
  auto take = [&](int port) {
    if (port == 0 || !given.insert(port).second) return 0;
    return port;
  };
  int ephemeral_start = 32768;  // Linux's default, unless the kernel says otherwise
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_start;
  if (ephemeral_start > kLowest + 1000) {
    // Seeded per process and call, so that tests starting together pick apart.
    thread_local std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(getpid()));
    std::uniform_int_distribution<int> pick(kLowest, ephemeral_start - 1);
    for (int attempt = 0; attempt < 100; ++attempt) {
      if (int port = take(BindLoopback(pick(rng))); port != 0) return port;
    }
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (int port = take(BindLoopback(0)); port != 0) return port;
  }
  return 0;
}

inline std::string LoopbackAddress(int port) { return "127.0.0.1:" + std::to_string(port); }

}  // namespace tessera::testing
