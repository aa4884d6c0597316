// StrSplit: a string's pieces between separators, empty ones kept ("a::b" gives "a", "",
// "b"). The views point into `s`. Thread-safe.
#pragma once

#include <string_view>
#include <vector>

namespace tessera {

std::vector<std::string_view> StrSplit(std::string_view s, char sep);

}  // namespace tessera
