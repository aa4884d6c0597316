// NodeExecStats: the timing of one node in one step, recorded when a step is traced
// (RunOptions::trace_level) and written out as a timeline. Plain data.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

struct NodeExecStats {
  std::string node;
  std::string op;
  std::string device;
  int64_t start_us = 0;  // since the Unix epoch
  int64_t end_us = 0;
  int64_t thread_id = 0;  // the OS thread id
};

}  // namespace tessera
