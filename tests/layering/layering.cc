#include "tests/layering/layering.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

namespace tessera::layering {
namespace fs = std::filesystem;

StatusOr<Layers> ParseLayers(const std::string& text) {
  std::map<std::string, std::vector<std::string>> direct;
  std::vector<std::pair<std::string, std::set<std::string>>> system_rules;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const size_t colon = line.find(':');
    if (line.rfind("system ", 0) == 0 && colon != std::string::npos) {
      std::istringstream prefixes(line.substr(7, colon - 7)), folders(line.substr(colon + 1));
      std::set<std::string> where;
      for (std::string f; folders >> f;) where.insert(f);
      for (std::string p; prefixes >> p;) system_rules.emplace_back(p, where);
      continue;
    }
    std::istringstream folder_words(line.substr(0, colon == std::string::npos ? 0 : colon));
    std::string folder, extra;
    if (colon == std::string::npos || !(folder_words >> folder) || (folder_words >> extra)) {
      return errors::InvalidArgument("layers line ", number, ": expected 'folder: folders it may include'");
    }
    if (direct.count(folder) != 0) return errors::InvalidArgument("layers line ", number, ": '", folder, "' named twice");
    std::istringstream deps(line.substr(colon + 1));
    std::vector<std::string>& list = direct[folder];
    for (std::string d; deps >> d;) list.push_back(d);
  }
  Layers layers;
  // Depth-first, refusing a folder met again on the current path: the layers point one way.
  std::set<std::string> on_path;
  std::function<Status(const std::string&)> close = [&](const std::string& folder) -> Status {
    if (layers.allowed.count(folder) != 0) return Status::OK();
    if (!on_path.insert(folder).second) return errors::InvalidArgument("layers: a cycle through '", folder, "'");
    std::set<std::string> allowed = {folder};
    for (const std::string& d : direct.at(folder)) {
      if (direct.count(d) == 0) return errors::InvalidArgument("layers: '", folder, "' may include '", d, "', which is not named");
      RETURN_IF_ERROR(close(d));
      allowed.insert(layers.allowed.at(d).begin(), layers.allowed.at(d).end());
    }
    on_path.erase(folder);
    layers.allowed.emplace(folder, std::move(allowed));
    return Status::OK();
  };
  for (const auto& [folder, deps] : direct) RETURN_IF_ERROR(close(folder));
  for (auto& [prefix, where] : system_rules) {
    for (const std::string& f : where) {
      if (direct.count(f) == 0) return errors::InvalidArgument("layers: system headers '", prefix, "*' kept to '", f, "', which is not named");
    }
    layers.system_only_in[prefix] = std::move(where);
  }
  return layers;
}

std::string FolderOf(const Layers& layers, const std::string& path) {
  for (std::string dir = fs::path(path).parent_path().string(); !dir.empty();
       dir = fs::path(dir).parent_path().string()) {
    if (layers.allowed.count(dir) != 0) return dir;
  }
  return "";
}

std::vector<std::string> CheckIncludes(const std::string& source_dir, const Layers& layers) {
  static const std::regex kInclude(R"re(^\s*#\s*include\s+"([^"]+)")re");
  static const std::regex kSystemInclude(R"re(^\s*#\s*include\s+<([^>]+)>)re");
  std::vector<std::string> broken;
  std::set<std::string> files;
  for (const auto& [folder, allowed] : layers.allowed) {
    const fs::path dir = fs::path(source_dir) / folder;
    if (!fs::is_directory(dir)) continue;
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
      const std::string ext = entry.path().extension().string();
      if (entry.is_regular_file() && (ext == ".h" || ext == ".cc" || ext == ".cu" || ext == ".cuh")) {
        files.insert(fs::relative(entry.path(), source_dir).string());
      }
    }
  }
  for (const std::string& file : files) {
    const std::string folder = FolderOf(layers, file);
    const std::set<std::string>& allowed = layers.allowed.at(folder);
    std::ifstream in(fs::path(source_dir) / file);
    std::string line;
    std::smatch m;
    for (int number = 1; std::getline(in, line); ++number) {
      if (std::regex_search(line, m, kSystemInclude)) {
        const std::string header = m[1];
        for (const auto& [prefix, where] : layers.system_only_in) {
          if (header.rfind(prefix, 0) == 0 && where.count(folder) == 0) {
            std::string only;
            for (const std::string& w : where) only += (only.empty() ? "" : " ") + w;
            broken.push_back(file + ":" + std::to_string(number) + " includes <" + header + ">, which only " + only +
                             " may (layers.txt)");
          }
        }
        continue;
      }
      if (!std::regex_search(line, m, kInclude)) continue;
      const std::string included = m[1];
      const std::string to = FolderOf(layers, included);
      if (to.empty() || allowed.count(to) != 0) continue;
      std::string may;
      for (const std::string& a : allowed) may += (may.empty() ? "" : " ") + a;
      broken.push_back(file + ":" + std::to_string(number) + " includes " + included + ": " + folder +
                       " may include only " + may + " (layers.txt)");
    }
  }
  return broken;
}

}  // namespace tessera::layering
