// Flags: the argument parser of every `tessera` command. A command names its flags, each with
// where its value goes, and its positional arguments; Parse reads them in any order and says
// what is wrong in the same words for every command ("unexpected argument '--x'", "--epochs
// needs a value", "--epochs takes an integer, got 'two'").
//
//   std::string graph;
//   std::vector<std::string> fetches;
//   bool soft = false;
//   int epochs = 2;
//   Flags flags;
//   flags.Positional("GRAPH", &graph).List("--fetch", &fetches).Switch("--allow-soft-placement", &soft)
//       .Int("--epochs", &epochs);
//   RETURN_IF_ERROR(flags.Parse(args));   // args[0] is the command's name
//
// One Flags per parse; not for concurrent use.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/platform/status.h"

namespace tessera {

class Flags {
 public:
  Flags& String(std::string name, std::string* out);
  // Stays nullopt unless the flag is given: "--x ''" is given and empty.
  Flags& String(std::string name, std::optional<std::string>* out);
  // Every occurrence, each split at its commas ("--fetch y,z:1").
  Flags& List(std::string name, std::vector<std::string>* out);
  // Every occurrence, as given.
  Flags& Repeated(std::string name, std::vector<std::string>* out);
  Flags& Int(std::string name, int64_t* out);
  // An int that must fit 32 bits.
  Flags& Int(std::string name, int* out);
  // A flag without a value.
  Flags& Switch(std::string name, bool* out);
  // The next argument that is not a flag, in the order declared; one not declared is
  // unexpected, one declared and missing is "missing WHAT".
  Flags& Positional(std::string what, std::string* out);

  // Reads args[first...]. InvalidArgument for a flag not declared, a flag without its value,
  // a value that does not parse, or a positional argument too many or missing.
  Status Parse(const std::vector<std::string>& args, size_t first = 1);
  // Whether the flag was on the command line.
  bool Given(std::string_view name) const { return given_.count(std::string(name)) != 0; }

 private:
  // Stores a flag's value (empty for a switch), or says why it cannot.
  using Setter = std::function<Status(const std::string& value)>;
  struct Flag {
    bool takes_value = true;
    Setter set;
  };
  std::map<std::string, Flag, std::less<>> flags_;
  std::vector<std::pair<std::string, std::string*>> positional_;
  std::map<std::string, int> given_;
};

// "a,b,,c" as {"a", "b", "c"}.
std::vector<std::string> SplitCommas(const std::string& s);

}  // namespace tessera
