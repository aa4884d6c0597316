#include "graph/json_util.h"

namespace tessera {

StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view what) {
  using json = nlohmann::json;
  // The parser keeps its own stack; dropping what lies past the limit keeps the value that
  // is returned shallow, and the flag turns it into an error.
  bool too_deep = false;
  auto limit_depth = [&too_deep](int depth, json::parse_event_t, json&) {
    if (depth <= kMaxJsonDepth) return true;
    too_deep = true;
    return false;
  };
  json j;
  try {
    j = json::parse(text, limit_depth);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for huge numbers
    return errors::InvalidArgument("Malformed ", what, ": ", e.what());
  }
  if (too_deep) return errors::InvalidArgument(what, " nests deeper than ", kMaxJsonDepth, " levels");
  return j;
}

std::string JsonExcerpt(const nlohmann::json& j) {
  return Excerpt(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace tessera
