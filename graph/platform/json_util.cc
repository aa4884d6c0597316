#include "graph/platform/json_util.h"

namespace tessera {

namespace {

// Whether `text` nests arrays and objects deeper than `limit`, counting brackets outside
// strings. Malformed text is left for the parser to describe.
bool NestsDeeperThan(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace

StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view what) {
  // Checked before parsing: the parser's own depth callback makes it quadratic in the
  // input's length (nlohmann/json 3.11).
  if (NestsDeeperThan(text, kMaxJsonDepth)) {
    return errors::InvalidArgument(what, " nests deeper than ", kMaxJsonDepth, " levels");
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for huge numbers
    return errors::InvalidArgument("Malformed ", what, ": ", e.what());
  }
}

std::string JsonExcerpt(const nlohmann::json& j) {
  return Excerpt(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace tessera
