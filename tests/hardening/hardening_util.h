// Helpers for the hardening suite: graphs and feeds as a user hands them to `tessera run`
// (JSON text), and a temporary folder per test.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "graph/serialize/graph_json.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace tessera::testing {

// Loads `graph` (JSON), feeds each (name, JSON tensor) and fetches; the first error of the
// load, the session or the step.
inline StatusOr<std::vector<Tensor>> RunJson(const std::string& graph, const std::vector<std::string>& fetches,
                                             const std::vector<std::pair<std::string, std::string>>& feeds = {},
                                             const SessionConfig& config = {}) {
  ASSIGN_OR_RETURN(GraphSpec def, GraphSpecFromJson(graph));
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(config, def));
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, text] : feeds) {
    ASSIGN_OR_RETURN(Tensor t, TensorFromJsonText(text));
    tensors.emplace_back(name, std::move(t));
  }
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run(tensors, fetches, {}, &out));
  return out;
}

// A folder of the test's own, removed with it.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera_hardening_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name), std::ios::binary) << text;
    return Path(name);
  }
  std::string Read(const std::string& path) const {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // The names in the folder, sorted.
  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::filesystem::path dir_;
};

}  // namespace tessera::testing
