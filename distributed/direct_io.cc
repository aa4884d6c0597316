#include "distributed/direct_io.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "distributed/direct_transport.h"

namespace tessera::direct {

bool WriteAll(int fd, std::vector<iovec> parts) {
  size_t first = 0;
  while (first < parts.size()) {
    msghdr message{};
    message.msg_iov = parts.data() + first;
    message.msg_iovlen = std::min<size_t>(parts.size() - first, IOV_MAX);
    const ssize_t n = ::sendmsg(fd, &message, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    size_t left = static_cast<size_t>(n);
    while (first < parts.size() && left >= parts[first].iov_len) left -= parts[first++].iov_len;
    if (left > 0) {
      parts[first].iov_base = static_cast<char*>(parts[first].iov_base) + left;
      parts[first].iov_len -= left;
    }
  }
  return true;
}

bool ReadAll(int fd, void* to, size_t n, const std::function<void()>& idle) {
  char* p = static_cast<char*>(to);
  while (n > 0) {
    const ssize_t got = ::recv(fd, p, n, MSG_WAITALL);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && idle != nullptr) {
      idle();
      continue;
    }
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool ReadString(int fd, size_t n, std::string* out, const std::function<void()>& idle) {
  out->resize(n);
  return ReadAll(fd, out->data(), n, idle);
}

sockaddr_un SocketAddress(std::string_view address, socklen_t* length) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = DirectSocketName(address);
  const size_t n = std::min(name.size(), sizeof(a.sun_path));
  std::memcpy(a.sun_path, name.data(), n);
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n);
  return a;
}

void SetBuffers(int fd) {
  const int bytes = kSocketBufferBytes;
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

void SetTcpOptions(int fd) {
  // No TCP_USER_TIMEOUT: it would also end a live connection whose receiver stopped reading
  // for that long (a reader running a step's work inline), where the heartbeats forgive it.
  const int on = 1, idle_s = 10, interval_s = 5, probes = 4;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
  (void)::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s));
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof(interval_s));
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
}

void SetReceiveTimeout(int fd, std::chrono::milliseconds timeout) {
  timeval t{};
  t.tv_sec = timeout.count() / 1000;
  t.tv_usec = (timeout.count() % 1000) * 1000;
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof(t));
}

}  // namespace tessera::direct
