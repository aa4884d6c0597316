#include "graph/platform/logging.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "graph/platform/rate_limited_log.h"

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

// A peer can cause a refusal line at any rate: one is written per interval, and the next
// says how many were held back.
TEST(LoggingTest, ARateLimitedLineIsWrittenOncePerIntervalAndCountsTheRest) {
  Capture sink;
  SetLogSink(&sink);
  RateLimitedLog refused(std::chrono::milliseconds(200));
  for (int i = 0; i < 1000; ++i) refused.Log(LogSeverity::kWarning, "refused");
  EXPECT_EQ(sink.lines, (std::vector<std::string>{"1:refused"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  refused.Log(LogSeverity::kWarning, "refused again");
  SetLogSink(nullptr);
  EXPECT_EQ(sink.lines, (std::vector<std::string>{"1:refused",
                                                  "1:refused again (and 999 more like it since the last such line)"}));
}

}  // namespace
}  // namespace tessera
