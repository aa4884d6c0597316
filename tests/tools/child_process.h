// A child process running the tessera binary (TESSERA_CLI), its stdout read through a
// pipe: what the multi-process tests of servers and clusters start their tasks as.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace tessera::testing {

class Child {
 public:
  // `in_child`, when given, runs in the child before the exec (to set its limits or user).
  Child(const std::vector<std::string>& args, const std::string& tf_config,
        const std::function<void()>& in_child = nullptr) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      if (tf_config.empty()) {
        unsetenv("TF_CONFIG");
      } else {
        setenv("TF_CONFIG", tf_config.c_str(), 1);
      }
      if (in_child) in_child();
      std::vector<char*> argv = {const_cast<char*>(TESSERA_CLI)};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(TESSERA_CLI, argv.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
  }

  // What the child printed until `text` appeared or `timeout` passed.
  std::string ReadUntil(const std::string& text, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (printed_.find(text) == std::string::npos && std::chrono::steady_clock::now() < end) {
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      const ssize_t n = read(out_, buf, sizeof buf);
      if (n <= 0) break;
      printed_.append(buf, static_cast<size_t>(n));
    }
    return printed_;
  }
  // The exit code, or -1 when it did not exit within `timeout`.
  int Wait(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < end) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      usleep(10000);
    }
    return -1;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  bool reaped_ = false;
  std::string printed_;
};

}  // namespace tessera::testing
