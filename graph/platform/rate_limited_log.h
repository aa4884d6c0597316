// RateLimitedLog: a log line that others can cause at any rate (a refused peer, a flood of
// requests without the token) is written at most once per interval, saying how many like it
// were held back since, so that a hostile peer cannot fill the disk or bury other lines.
//
//   static RateLimitedLog refused;   // once a minute
//   refused.Log(LogSeverity::kWarning, StrCat(task, " refused a connection from ", who));
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "graph/platform/logging.h"

namespace tessera {

class RateLimitedLog {
 public:
  explicit RateLimitedLog(std::chrono::steady_clock::duration interval = std::chrono::minutes(1))
      : interval_(interval) {}

  // Writes `message` unless a line was written less than the interval ago; then counts it.
  void Log(LogSeverity severity, std::string_view message);

 private:
  const std::chrono::steady_clock::duration interval_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point last_{};  // guarded by mu_
  bool written_ = false;                          // guarded by mu_
  int64_t held_back_ = 0;                         // guarded by mu_
};

}  // namespace tessera
