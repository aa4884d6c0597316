#include "graph/platform/logging.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera {
namespace {

struct Capture : LogSink {
  void Write(LogSeverity s, std::string_view m) override { lines.emplace_back(std::to_string(static_cast<int>(s)) + ":" + std::string(m)); }
  std::vector<std::string> lines;
};

// CTest runs this binary with TESSERA_MIN_LOG_LEVEL=1.
TEST(LoggingTest, MinimumSeverityStartsFromTheEnvironment) {
  EXPECT_EQ(MinLogSeverity(), LogSeverity::kWarning);
}

TEST(LoggingTest, SinkAndSeverityCanBeChangedByApi) {
  Capture sink;
  SetLogSink(&sink);
  SetMinLogSeverity(LogSeverity::kWarning);
  Log(LogSeverity::kInfo, "dropped");
  Log(LogSeverity::kError, "kept");
  SetMinLogSeverity(LogSeverity::kInfo);
  Log(LogSeverity::kInfo, "now kept");
  SetLogSink(nullptr);
  Log(LogSeverity::kInfo, "to stderr, not the capture");
  EXPECT_EQ(sink.lines, (std::vector<std::string>{"2:kept", "0:now kept"}));
}

}  // namespace
}  // namespace tessera
