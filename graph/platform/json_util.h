// Reading JSON that users write: one parse with a nesting limit for every file and feed
// Tessera reads, and short excerpts of values for error messages.
// Both functions are thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "graph/platform/status.h"

namespace tessera {

// Nothing Tessera reads nests deeper than this (a graph's function bodies nest 16 levels at
// most); deeper input is refused before anything walks it recursively.
inline constexpr int kMaxJsonDepth = 256;

// Malformed JSON, or JSON nested past kMaxJsonDepth, is InvalidArgument naming `what`
// ("JSON graph", "feed 'x'").
StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view what);

// A value's JSON cut to about 80 characters, so that a message never quotes a whole input.
std::string JsonExcerpt(const nlohmann::json& j);

}  // namespace tessera
