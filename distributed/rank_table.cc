#include "distributed/rank_table.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "graph/platform/loopback.h"
#include "graph/platform/socket_address.h"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

// Longer than any report or table line: a host name (253) and the rest.
constexpr size_t kMaxLine = 512;

class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

int MillisLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1000));  // poll a second at most, to look at the clock
}

StatusOr<std::pair<std::string, std::string>> SplitHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  const std::string host = Unbracketed(colon == std::string::npos ? "" : address.substr(0, colon));
  const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 ||
      std::stoi(port) == 0 || std::stoi(port) > 65535) {
    return errors::InvalidArgument("the coordinator '", address, "' is not host:port");
  }
  return std::make_pair(host, port);
}

std::string JoinHostPort(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? StrCat("[", host, "]:", port) : StrCat(host, ":", port);
}

Status SendAll(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, MillisLeft(deadline)) < 0 && errno != EINTR) {
      return errors::Unavailable("poll: ", strerror(errno));
    }
    if (Clock::now() >= deadline) return errors::DeadlineExceeded("sending the rank table timed out");
    const ssize_t sent = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0 && errno != EAGAIN && errno != EINTR) return errors::Unavailable("send: ", strerror(errno));
    if (sent > 0) data.remove_prefix(static_cast<size_t>(sent));
  }
  return Status::OK();
}

// Rank 0's side: one connection's bytes so far.
struct Reporter {
  Socket socket;
  std::string buffer;
};

// "RANK <rank> <size> <host> <port>": the rank and its address, or why not. A loopback host
// is a rank on rank 0's machine that reached it by a loopback name (Debian's 127.0.1.1 for
// the machine's own): the others reach it by the coordinator's host, `here`.
StatusOr<std::pair<int, std::string>> ParseReport(const std::string& line, int size, const std::string& here) {
  std::istringstream in(line);
  std::string word, host, extra;
  int64_t rank = -1, their_size = -1, port = -1;
  if (!(in >> word >> rank >> their_size >> host >> port) || word != "RANK" || (in >> extra)) {
    return errors::InvalidArgument("not a report 'RANK <rank> <size> <host> <port>'");
  }
  if (their_size != size) return errors::InvalidArgument("it counts ", their_size, " ranks; rank 0 counts ", size);
  if (rank < 1 || rank >= size) return errors::InvalidArgument("rank ", rank, " is not one of 1 to ", size - 1);
  if (port < 1 || port > 65535) return errors::InvalidArgument("port ", port, " is out of range");
  if (IsLoopbackHost(host) && !IsLoopbackHost(here)) host = here;
  return std::make_pair(static_cast<int>(rank), JoinHostPort(host, static_cast<int>(port)));
}

StatusOr<Socket> Listen(const std::string& port_text) {
  // Every address of the machine: the coordinator's name may resolve to one the others do
  // not reach (Debian's 127.0.1.1 for the host's own name).
  for (int family : {AF_INET6, AF_INET}) {
    Socket s(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (s.fd() < 0) continue;
    const int on = 1, off = 0;
    ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_storage addr{};
    socklen_t len;
    const uint16_t port = htons(static_cast<uint16_t>(std::stoi(port_text)));
    if (family == AF_INET6) {
      ::setsockopt(s.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
      auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_any;
      a->sin6_port = port;
      len = sizeof(sockaddr_in6);
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&addr);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_ANY);
      a->sin_port = port;
      len = sizeof(sockaddr_in);
    }
    if (::bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), len) == 0 && ::listen(s.fd(), 128) == 0) return s;
    if (errno == EADDRINUSE) return errors::Unavailable("port ", port_text, " is in use");
  }
  return errors::Unavailable("cannot listen on port ", port_text, ": ", strerror(errno));
}

StatusOr<std::vector<std::string>> Serve(int size, const std::string& host, const std::string& port_text, int port,
                                         Clock::time_point deadline, const std::string& coordinator) {
  std::vector<std::string> table(static_cast<size_t>(size));
  table[0] = JoinHostPort(host, port);
  if (size == 1) return table;
  ASSIGN_OR_RETURN(Socket listener, Listen(port_text));
  std::vector<Reporter> open;
  std::map<int, Socket> reported;
  while (static_cast<int>(reported.size()) < size - 1) {
    if (Clock::now() >= deadline) {
      std::string missing;
      for (int r = 1; r < size; ++r) {
        if (reported.count(r) == 0) missing += StrCat(missing.empty() ? "" : ", ", r);
      }
      return errors::DeadlineExceeded("rank 0 at ", coordinator, " heard from ", reported.size() + 1, " of ", size,
                                      " ranks; rank(s) ", missing, " did not report");
    }
    std::vector<pollfd> polled{{listener.fd(), POLLIN, 0}};
    for (const Reporter& r : open) polled.push_back({r.socket.fd(), POLLIN, 0});
    if (::poll(polled.data(), polled.size(), MillisLeft(deadline)) < 0 && errno != EINTR) {
      return errors::Unavailable("poll: ", strerror(errno));
    }
    const size_t polled_open = open.size();  // connections accepted now are polled next time
    if (polled[0].revents & POLLIN) {
      const int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0 && open.size() < static_cast<size_t>(2 * size + 16)) {
        open.push_back({Socket(fd), ""});
      } else if (fd >= 0) {
        ::close(fd);  // more connections at once than a launch makes: someone else's
      } else if (errno == EMFILE || errno == ENFILE || errno == ENOMEM) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    for (size_t i = polled_open; i-- > 0;) {
      if (!(polled[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Reporter& r = open[i];
      char chunk[256];
      const ssize_t got = ::recv(r.socket.fd(), chunk, sizeof chunk, MSG_DONTWAIT);
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (got > 0) r.buffer.append(chunk, static_cast<size_t>(got));
      const size_t newline = r.buffer.find('\n');
      Status bad = Status::OK();
      if (newline == std::string::npos) {
        if (got > 0 && r.buffer.size() <= kMaxLine) continue;
        bad = errors::InvalidArgument(got <= 0 ? "the connection closed before a report" : "a line too long");
      } else {
        StatusOr<std::pair<int, std::string>> report = ParseReport(r.buffer.substr(0, newline), size, host);
        if (report.ok() && reported.count(report->first) != 0) {
          report = errors::InvalidArgument("rank ", report->first, " has reported already");
        }
        if (report.ok() && std::find(table.begin(), table.end(), report->second) != table.end()) {
          report = errors::InvalidArgument("another rank serves at ", report->second,
                                           " (two ranks of one host with one local rank?)");
        }
        if (report.ok()) {
          table[static_cast<size_t>(report->first)] = report->second;
          reported.emplace(report->first, std::move(r.socket));
        } else {
          bad = report.status();
        }
      }
      if (!bad.ok()) {  // best effort: the peer may be gone
        (void)SendAll(r.socket.fd(), StrCat("ERROR ", bad.message(), "\n"),
                      Clock::now() + std::chrono::milliseconds(100));
      }
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  std::string answer = "TABLE\n";
  for (const std::string& address : table) answer += address + "\n";
  answer += "END\n";
  // Every rank gets its answer, whichever fails.
  Status first = Status::OK();
  for (const auto& [rank, socket] : reported) {
    Status s = SendAll(socket.fd(), answer, deadline);
    if (!s.ok() && first.ok()) first = s.WithPrefix(StrCat("rank 0 answering rank ", rank, ": "));
  }
  RETURN_IF_ERROR(first);
  return table;
}

// This end's address of a connected socket, as others reach it.
std::string LocalHost(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  return AddressText(addr);
}

// Connects to rank 0, trying again while it is not listening yet.
StatusOr<Socket> Connect(const std::string& host, const std::string& port, Clock::time_point deadline,
                         const std::string& coordinator) {
  std::string last = "no address";
  while (Clock::now() < deadline) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int error = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
    if (error != 0) {
      last = gai_strerror(error);
    } else {
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
        if (s.fd() < 0) continue;
        if (::connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
          last = strerror(errno);
          continue;
        }
        pollfd p{s.fd(), POLLOUT, 0};
        int so_error = 0;
        socklen_t len = sizeof so_error;
        if (::poll(&p, 1, MillisLeft(deadline)) == 1 &&
            ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &so_error, &len) == 0 && so_error == 0) {
          ::freeaddrinfo(found);
          return s;
        }
        last = so_error != 0 ? strerror(so_error) : "timed out";
      }
      ::freeaddrinfo(found);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return errors::DeadlineExceeded("rank 0 at ", coordinator, " could not be reached: ", last);
}

StatusOr<std::vector<std::string>> Report(int rank, int size, const std::string& host, const std::string& port_text,
                                          int port, Clock::time_point deadline, const std::string& coordinator) {
  ASSIGN_OR_RETURN(Socket s, Connect(host, port_text, deadline, coordinator));
  RETURN_IF_ERROR(SendAll(s.fd(), StrCat("RANK ", rank, " ", size, " ", LocalHost(s.fd()), " ", port, "\n"), deadline));
  // The answer, to its end, bounded: a lying rank 0 gets an error, not our memory.
  const size_t limit = static_cast<size_t>(size + 2) * kMaxLine;
  std::string answer;
  while (answer.size() <= limit) {
    pollfd p{s.fd(), POLLIN, 0};
    if (::poll(&p, 1, MillisLeft(deadline)) < 0 && errno != EINTR) {
      return errors::Unavailable("poll: ", strerror(errno));
    }
    if (Clock::now() >= deadline) {
      return errors::DeadlineExceeded("rank ", rank, " reported to rank 0 at ", coordinator,
                                      " but had no table before the timeout (other ranks missing?)");
    }
    char chunk[4096];
    const ssize_t got = ::recv(s.fd(), chunk, sizeof chunk, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got <= 0) break;
    answer.append(chunk, static_cast<size_t>(got));
  }
  std::vector<std::string> lines;
  std::istringstream in(answer);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (!lines.empty() && lines[0].rfind("ERROR ", 0) == 0) {
    return errors::InvalidArgument("rank 0 at ", coordinator, " refused rank ", rank, "'s report: ",
                                   lines[0].substr(6));
  }
  const bool whole = lines.size() == static_cast<size_t>(size) + 2 && lines.front() == "TABLE" &&
                     lines.back() == "END" &&
                     std::all_of(lines.begin() + 1, lines.end() - 1, [](const std::string& address) {
                       return !address.empty() && address.find(' ') == std::string::npos;
                     });
  if (!whole) {
    return errors::InvalidArgument("rank 0 at ", coordinator, " answered rank ", rank, " with no table of ", size,
                                   " addresses");
  }
  std::vector<std::string> table(lines.begin() + 1, lines.end() - 1);
  return table;
}

}  // namespace

StatusOr<std::vector<std::string>> ExchangeRankAddresses(int rank, int size, const std::string& coordinator, int port,
                                                         std::chrono::milliseconds timeout) {
  if (size < 1 || rank < 0 || rank >= size) {
    return errors::InvalidArgument("rank ", rank, " of ", size, " is not a rank of the launch");
  }
  if (port < 1 || port > 65535) return errors::InvalidArgument("port ", port, " is out of range");
  ASSIGN_OR_RETURN(auto host_port, SplitHostPort(coordinator));
  const Clock::time_point deadline = Clock::now() + timeout;
  if (rank == 0) {
    if (std::stoi(host_port.second) == port) {
      return errors::InvalidArgument("rank 0 serves on port ", port,
                                     ", the coordinator's: give the coordinator another");
    }
    return Serve(size, host_port.first, host_port.second, port, deadline, coordinator);
  }
  return Report(rank, size, host_port.first, host_port.second, port, deadline, coordinator);
}

}  // namespace tessera
