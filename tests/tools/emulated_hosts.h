// Emulated machines for a test (tests/tools/emulated_hosts.sh): network namespaces joined by
// a bridge, host I at 198.18.0.I, each link shaped. Made by the constructor, removed by the
// destructor, failed test or not; where they cannot be made (not root, no `ip` or `tc`, no
// namespaces) skip_reason() says why and the test skips.
//
//   EmulatedHosts hosts(3);
//   if (!hosts.skip_reason().empty()) GTEST_SKIP() << hosts.skip_reason();
//   Child server({"server", ...}, "", hosts.Enter(2));   // a process on host 2
//   RunCommand(hosts.Exec(1, "tessera run ..."));        // a command on host 1
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "graph/platform/status.h"
#include "tests/tools/multi_worker_check.h"

namespace tessera::testing {

class EmulatedHosts {
 public:
  explicit EmulatedHosts(int hosts, const std::string& rate = "10gbit") : name_(StrCat("tsh", getpid())) {
    if (geteuid() != 0) {
      skip_reason_ = "emulated hosts are network namespaces, which need root";
      return;
    }
    const auto [out, status] = RunCommand(StrCat(kScript, " up ", name_, " ", hosts, " ", rate));
    if (status != 0) skip_reason_ = StrCat("emulated hosts could not be made: ", out);
  }
  ~EmulatedHosts() { RunCommand(StrCat(kScript, " down ", name_)); }
  EmulatedHosts(const EmulatedHosts&) = delete;
  EmulatedHosts& operator=(const EmulatedHosts&) = delete;

  const std::string& skip_reason() const { return skip_reason_; }
  static std::string Ip(int host) { return StrCat("198.18.0.", host); }
  static std::string Address(int host, int port) { return StrCat(Ip(host), ":", port); }
  // `command` as run on `host`.
  std::string Exec(int host, const std::string& command) const {
    return StrCat("ip netns exec ", name_, "-h", host, " ", command);
  }
  // For a Child's in_child: moves the process onto `host` before it execs.
  std::function<void()> Enter(int host) const {
    const std::string path = StrCat("/var/run/netns/", name_, "-h", host);
    return [path] {
      const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(126);
    };
  }
  // Takes host `host`'s link down or brings it back.
  bool Link(int host, bool up) const {
    return RunCommand(StrCat(kScript, " link ", name_, " ", host, up ? " up" : " down")).second == 0;
  }
  // Adds latency and loss to every link; empty where it did, else why not.
  std::string Netem(const std::string& delay, const std::string& loss) const {
    const auto [out, status] = RunCommand(StrCat(kScript, " netem ", name_, " ", delay, " ", loss));
    return status == 0 ? "" : out;
  }

 private:
  static constexpr const char* kScript = TESSERA_SOURCE_DIR "/tests/tools/emulated_hosts.sh";
  std::string name_;
  std::string skip_reason_;
};

}  // namespace tessera::testing
