// Logging through a sink the embedding program can replace.
//
//   tessera::SetLogSink(&my_sink);                 // e.g. to show lines in a notebook
//   tessera::SetMinLogSeverity(LogSeverity::kWarning);
//
// The minimum severity starts from the environment variable TESSERA_MIN_LOG_LEVEL
// (0 = info, 1 = warning, 2 = error; like TF_CPP_MIN_LOG_LEVEL) and can be changed by API.
// All functions here may be called from any thread; a sink's Write may be called
// concurrently from several threads and must be thread-safe.
#pragma once

#include <string_view>

namespace tessera {

enum class LogSeverity { kInfo = 0, kWarning = 1, kError = 2 };

class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void Write(LogSeverity severity, std::string_view message) = 0;
};

// Replaces the sink; nullptr restores the default (stderr). The sink is borrowed and must
// outlive its installation.
void SetLogSink(LogSink* sink);
void SetMinLogSeverity(LogSeverity severity);
LogSeverity MinLogSeverity();

// Writes `message` (one or more lines, without trailing newline) when `severity` is at or
// above the minimum.
void Log(LogSeverity severity, std::string_view message);

}  // namespace tessera
