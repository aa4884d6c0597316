#include "graph/platform/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace tessera {
namespace {

class StderrSink : public LogSink {
 public:
  void Write(LogSeverity, std::string_view message) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::fwrite(message.data(), 1, message.size(), stderr);
    std::fputc('\n', stderr);
  }

 private:
  std::mutex mu_;
};

LogSeverity SeverityFromEnv() {
  const char* v = std::getenv("TESSERA_MIN_LOG_LEVEL");
  if (v == nullptr) return LogSeverity::kInfo;
  int level = std::atoi(v);
  if (level <= 0) return LogSeverity::kInfo;
  return level == 1 ? LogSeverity::kWarning : LogSeverity::kError;
}

StderrSink& DefaultSink() {
  static StderrSink* sink = new StderrSink;
  return *sink;
}

std::atomic<LogSink*> g_sink{nullptr};
std::atomic<int> g_min_severity{static_cast<int>(SeverityFromEnv())};

}  // namespace

void SetLogSink(LogSink* sink) { g_sink.store(sink); }
void SetMinLogSeverity(LogSeverity s) { g_min_severity.store(static_cast<int>(s)); }
LogSeverity MinLogSeverity() { return static_cast<LogSeverity>(g_min_severity.load()); }

void Log(LogSeverity severity, std::string_view message) {
  if (static_cast<int>(severity) < g_min_severity.load(std::memory_order_relaxed)) return;
  LogSink* sink = g_sink.load();
  (sink != nullptr ? *sink : static_cast<LogSink&>(DefaultSink())).Write(severity, message);
}

}  // namespace tessera
