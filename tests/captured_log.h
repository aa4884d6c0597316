// CapturedLog: what the process logs while it is alive, for tests that assert on log lines.
// It installs itself as the log sink and restores the default when it goes; one at a time.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "graph/platform/logging.h"

namespace tessera::testing {

class CapturedLog : public LogSink {
 public:
  CapturedLog() { SetLogSink(this); }
  ~CapturedLog() override { SetLogSink(nullptr); }
  void Write(LogSeverity, std::string_view message) override {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.emplace_back(message);
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  // Every line, each ended by a newline.
  std::string text() {
    std::string all;
    for (const std::string& line : lines()) all += line + "\n";
    return all;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

}  // namespace tessera::testing
