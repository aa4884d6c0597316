// What a process holds, read from /proc: for tests that a server's threads, descriptors and
// memory come back to where they were whatever its peers did.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace tessera::testing {

// A field of /proc/<pid>/status ("Threads", "VmRSS" in kB); -1 when the process is gone.
inline int64_t ProcStatus(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

inline int64_t ThreadCount(pid_t pid = ::getpid()) { return ProcStatus(pid, "Threads"); }
inline int64_t RssBytes(pid_t pid = ::getpid()) { return ProcStatus(pid, "VmRSS") * 1024; }

inline int64_t DescriptorCount(pid_t pid = ::getpid()) {
  std::error_code error;
  int64_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++n;
  }
  return error ? -1 : n;
}

// Polls `done` until it holds or `limit` passes; whether it held.
inline bool Eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace tessera::testing
