#include "tools/flags.h"

#include <charconv>
#include <limits>
#include <sstream>

namespace tessera {

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

Flags& Flags::String(std::string name, std::string* out) {
  flags_[std::move(name)] = {true, [out](const std::string& v) {
                               *out = v;
                               return Status::OK();
                             }};
  return *this;
}

Flags& Flags::String(std::string name, std::optional<std::string>* out) {
  flags_[std::move(name)] = {true, [out](const std::string& v) {
                               *out = v;
                               return Status::OK();
                             }};
  return *this;
}

Flags& Flags::List(std::string name, std::vector<std::string>* out) {
  flags_[std::move(name)] = {true, [out](const std::string& v) {
                               for (std::string& part : SplitCommas(v)) out->push_back(std::move(part));
                               return Status::OK();
                             }};
  return *this;
}

Flags& Flags::Repeated(std::string name, std::vector<std::string>* out) {
  flags_[std::move(name)] = {true, [out](const std::string& v) {
                               out->push_back(v);
                               return Status::OK();
                             }};
  return *this;
}

Flags& Flags::Int(std::string name, int64_t* out) {
  flags_[name] = {true, [name, out](const std::string& v) -> Status {
                    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
                    if (ec != std::errc() || end != v.data() + v.size()) {
                      return errors::InvalidArgument(name, " takes an integer, got '", v, "'");
                    }
                    return Status::OK();
                  }};
  return *this;
}

Flags& Flags::Int(std::string name, int* out) {
  flags_[name] = {true, [name, out](const std::string& v) -> Status {
                    int64_t n = 0;
                    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
                    if (ec != std::errc() || end != v.data() + v.size()) {
                      return errors::InvalidArgument(name, " takes an integer, got '", v, "'");
                    }
                    if (n < std::numeric_limits<int>::min() || n > std::numeric_limits<int>::max()) {
                      return errors::InvalidArgument(name, " takes a 32-bit integer, got '", v, "'");
                    }
                    *out = static_cast<int>(n);
                    return Status::OK();
                  }};
  return *this;
}

Flags& Flags::Switch(std::string name, bool* out) {
  flags_[std::move(name)] = {false, [out](const std::string&) {
                               *out = true;
                               return Status::OK();
                             }};
  return *this;
}

Flags& Flags::Positional(std::string what, std::string* out) {
  positional_.emplace_back(std::move(what), out);
  return *this;
}

Status Flags::Parse(const std::vector<std::string>& args, size_t first) {
  size_t next_positional = 0;
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto flag = flags_.find(a);
    if (flag == flags_.end()) {
      if (a.starts_with("--") || next_positional == positional_.size()) {
        return errors::InvalidArgument("unexpected argument '", a, "'");
      }
      *positional_[next_positional++].second = a;
      continue;
    }
    ++given_[a];
    if (!flag->second.takes_value) {
      RETURN_IF_ERROR(flag->second.set(""));
      continue;
    }
    if (i + 1 >= args.size()) return errors::InvalidArgument(a, " needs a value");
    RETURN_IF_ERROR(flag->second.set(args[++i]));
  }
  if (next_positional < positional_.size()) {
    return errors::InvalidArgument("missing ", positional_[next_positional].first);
  }
  return Status::OK();
}

}  // namespace tessera
