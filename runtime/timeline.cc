#include "runtime/timeline.h"

#include <map>

#include <nlohmann/json.hpp>

namespace tessera {

std::string ChromeTraceJson(const RunMetadata& metadata) {
  using json = nlohmann::json;
  json events = json::array();
  std::map<std::string, int> pids;
  for (const NodeExecStats& s : metadata.step_stats) {
    auto [it, inserted] = pids.try_emplace(s.device, static_cast<int>(pids.size()));
    if (inserted) {
      events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", it->second},
                        {"args", {{"name", s.device}}}});
    }
    events.push_back({{"name", s.node},
                      {"cat", s.op},
                      {"ph", "X"},
                      {"ts", s.start_us},
                      {"dur", std::max<int64_t>(s.end_us - s.start_us, 0)},
                      {"pid", it->second},
                      {"tid", s.thread_id},
                      {"args", {{"op", s.op}, {"device", s.device}}}});
  }
  json trace = {{"traceEvents", events}, {"displayTimeUnit", "us"}};
  return trace.dump(1, ' ', false, json::error_handler_t::replace);
}

}  // namespace tessera
