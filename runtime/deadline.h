// DeadlineAfter: the moment a timeout from now ends, without overflowing the clock. A
// timeout past what steady_clock can represent from now (about 292 years) is no deadline,
// as is one of zero or less; `operation_timeout_in_ms` of 9.3e12 used to wrap into an
// immediate DeadlineExceeded.
#pragma once

#include <chrono>
#include <optional>

namespace tessera {

inline std::optional<std::chrono::steady_clock::time_point> DeadlineAfter(std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  if (timeout.count() <= 0) return std::nullopt;
  const Clock::time_point now = Clock::now();
  if (timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now)) {
    return std::nullopt;
  }
  return now + timeout;
}

}  // namespace tessera
