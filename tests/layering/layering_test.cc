#include "tests/layering/layering.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <cctype>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::layering {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The repository's own includes all keep to layers.txt.
TEST(LayeringTest, EveryIncludeOfTheTreeKeepsToTheLayers) {
  const std::string text = ReadFile(fs::path(TESSERA_SOURCE_DIR) / "layers.txt");
  ASSERT_FALSE(text.empty()) << "no layers.txt in " << TESSERA_SOURCE_DIR;
  StatusOr<Layers> layers = ParseLayers(text);
  ASSERT_TRUE(layers.ok()) << layers.status();
  for (const char* folder : {"graph", "kernels", "placement", "runtime", "distributed", "tools"}) {
    EXPECT_EQ(FolderOf(*layers, std::string(folder) + "/x.h"), folder) << "layers.txt does not name " << folder;
  }
  EXPECT_THAT(CheckIncludes(TESSERA_SOURCE_DIR, *layers), ElementsAre());
}

class SyntheticTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("layering_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }
  fs::path root_;
};

TEST_F(SyntheticTree, AnUpwardIncludeIsReportedWithItsLine) {
  StatusOr<Layers> layers = ParseLayers("low:\nmid: low  # comment\nhigh: mid\n");
  ASSERT_TRUE(layers.ok()) << layers.status();
  Write("low/a.h", "#pragma once\n");
  Write("mid/b.h", "#include \"low/a.h\"\n#include <vector>\n#include \"tessera/c_api.h\"\n");
  Write("high/c.cc", "#include \"low/a.h\"\n#include \"mid/b.h\"\n");  // transitively allowed
  EXPECT_THAT(CheckIncludes(root_.string(), *layers), ElementsAre());

  Write("low/sub/d.cc", "// an unnamed subfolder belongs to low\n  #  include \"high/c.h\"\n");
  EXPECT_THAT(CheckIncludes(root_.string(), *layers),
              ElementsAre(AllOf(HasSubstr("low/sub/d.cc:2 includes high/c.h"), HasSubstr("low may include only low"))));
}

TEST_F(SyntheticTree, SiblingsMayNotIncludeEachOther) {
  StatusOr<Layers> layers = ParseLayers("base:\nleft: base\nright: base\n");
  ASSERT_TRUE(layers.ok()) << layers.status();
  Write("left/a.cc", "#include \"right/b.h\"\n");
  EXPECT_THAT(CheckIncludes(root_.string(), *layers), ElementsAre(HasSubstr("left/a.cc:1 includes right/b.h")));
}

TEST_F(SyntheticTree, SystemHeadersAreKeptToTheirFolders) {
  StatusOr<Layers> layers = ParseLayers("low:\ngpu: low\nhigh: low\nsystem cuda cudnn: gpu\n");
  ASSERT_TRUE(layers.ok()) << layers.status();
  Write("gpu/a.cc", "#include <cuda_runtime_api.h>\n#include <cudnn.h>\n");
  Write("high/b.cc", "#include <vector>\n#include <cudnn.h>\n");
  EXPECT_THAT(CheckIncludes(root_.string(), *layers),
              ElementsAre(HasSubstr("high/b.cc:2 includes <cudnn.h>, which only gpu may")));
}

// The GPU provider is the one place that speaks CUDA: no runtime, placement or cluster file
// names it, in code or in a comment.
TEST(LayeringTest, OnlyTheGpuProviderNamesCuda) {
  for (const char* folder : {"runtime", "placement", "distributed"}) {
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(fs::path(TESSERA_SOURCE_DIR) / folder)) {
      if (!entry.is_regular_file()) continue;
      std::string text = ReadFile(entry.path());
      for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      EXPECT_EQ(text.find("cuda"), std::string::npos) << entry.path() << " names CUDA";
    }
  }
}

TEST(LayersFileTest, MalformedFilesAreRefused) {
  EXPECT_THAT(ParseLayers("a:\na:\n").status().message(), HasSubstr("'a' named twice"));
  EXPECT_THAT(ParseLayers("a: b\n").status().message(), HasSubstr("'b', which is not named"));
  EXPECT_THAT(ParseLayers("a: b\nb: a\n").status().message(), HasSubstr("cycle"));
  EXPECT_THAT(ParseLayers("no colon here\n").status().message(), HasSubstr("line 1"));
  EXPECT_THAT(ParseLayers("two words: x\n").status().message(), HasSubstr("line 1"));
  EXPECT_THAT(ParseLayers("a:\nsystem cuda: b\n").status().message(), HasSubstr("'b', which is not named"));
}

}  // namespace
}  // namespace tessera::layering
