// The layering check: reads layers.txt (the floors of the house and what each may include)
// and reports every #include "..." of a source tree that it does not allow.
//
//   StatusOr<Layers> layers = ParseLayers(text);
//   std::vector<std::string> broken = CheckIncludes(source_dir, *layers);   // empty when all hold
//
// Pure functions over the files; thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/platform/status.h"

namespace tessera::layering {

struct Layers {
  // folder -> the folders it may include, its own and those reachable through the file.
  std::map<std::string, std::set<std::string>> allowed;
  // "system cuda cudnn: devices/gpu": a system header (#include <...>) whose name starts
  // with one of the prefixes may be included only in those folders. Prefix -> folders.
  std::map<std::string, std::set<std::string>> system_only_in;
};

// InvalidArgument for a malformed line, a folder named twice, a dependency on a folder not
// named, or a cycle. A line "system PREFIX...: FOLDER..." keeps system headers to folders.
StatusOr<Layers> ParseLayers(const std::string& text);

// The folder a file or include belongs to: its nearest ancestor named in `layers`; empty
// when there is none.
std::string FolderOf(const Layers& layers, const std::string& path);

// Every quoted include of every source file (.h .cc .cu .cuh) under the named folders of
// `source_dir` that names a file of another folder its own may not include, as
// "runtime/x.cc:12 includes devices/gpu/y.h: runtime may include ...", and every system
// include a "system" line keeps elsewhere. Other includes that are not of the tree
// ("tessera/c_api.h") are not checked.
std::vector<std::string> CheckIncludes(const std::string& source_dir, const Layers& layers);

}  // namespace tessera::layering
