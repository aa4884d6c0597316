#include "graph/platform/rate_limited_log.h"

#include "graph/platform/status.h"

namespace tessera {

void RateLimitedLog::Log(LogSeverity severity, std::string_view message) {
  int64_t held_back = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (written_ && now - last_ < interval_) {
      ++held_back_;
      return;
    }
    written_ = true;
    last_ = now;
    held_back = std::exchange(held_back_, 0);
  }
  if (held_back == 0) {
    tessera::Log(severity, message);
  } else {
    tessera::Log(severity, StrCat(message, " (and ", held_back, " more like it since the last such line)"));
  }
}

}  // namespace tessera
