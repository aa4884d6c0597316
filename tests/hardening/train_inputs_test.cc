// `tessera train` and `tessera run` given data sets, output paths and flags that are wrong.
#include <gmock/gmock.h>

#include <sstream>

#include "tests/hardening/hardening_util.h"
#include "tools/cli.h"

namespace tessera::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

class TrainInputsTest : public TempDirTest {
 protected:
  // An IDX split in data/: `images` blank 28x28 images and `labels` labels, all `label`.
  // Written uncompressed under the .gz names, which the reader takes as they are.
  void WriteSplit(const std::string& split, uint32_t images, uint32_t labels, uint8_t label = 3) {
    fs::create_directories(Path("data"));
    auto header = [](uint8_t rank, std::vector<uint32_t> dims) {
      std::string h = {0, 0, 8, static_cast<char>(rank)};
      for (uint32_t d : dims) {
        for (int shift = 24; shift >= 0; shift -= 8) h += static_cast<char>((d >> shift) & 0xff);
      }
      return h;
    };
    Write("data/" + split + "-images-idx3-ubyte.gz",
          header(3, {images, 28, 28}) + std::string(size_t{images} * 28 * 28, '\0'));
    Write("data/" + split + "-labels-idx1-ubyte.gz",
          header(1, {labels}) + std::string(labels, static_cast<char>(label)));
  }

  int Run(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    return RunCli(args, out_, err_);
  }
  // A short training on data/ with whatever else is asked.
  int Train(std::vector<std::string> extra) {
    std::vector<std::string> args = {"train", "--data", Path("data"), "--epochs", "1", "--devices", "1",
                                     "--batch", "32", "--threads", "1", "--learning-rate", "0.01", "--no-progress"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Run(args);
  }

  std::ostringstream out_, err_;
};

// The accuracy is over the test images there are, not over 10,000.
TEST_F(TrainInputsTest, AccuracyIsOverTheTestImagesThereAre) {
  WriteSplit("train", 256, 256);
  WriteSplit("t10k", 200, 200);
  ASSERT_EQ(Train({}), 0) << err_.str();
  // Blank images all labelled 3: after one epoch every test image is a 3.
  EXPECT_THAT(out_.str(), HasSubstr("test accuracy 1.0000"));
}

TEST_F(TrainInputsTest, AnEmptyTrainingSetIsRefused) {
  WriteSplit("train", 0, 0);
  WriteSplit("t10k", 10, 10);
  ASSERT_EQ(Train({}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("InvalidArgument"));
  EXPECT_THAT(err_.str(), HasSubstr("train-images-idx3-ubyte.gz' holds no images"));
}

TEST_F(TrainInputsTest, ImagesAndLabelsMustAgree) {
  WriteSplit("train", 64, 63);
  WriteSplit("t10k", 10, 10);
  ASSERT_EQ(Train({}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("holds 64 images but"));
  EXPECT_THAT(err_.str(), HasSubstr("63 labels"));
  WriteSplit("train", 64, 64);
  WriteSplit("t10k", 10, 12);
  ASSERT_EQ(Train({}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("holds 10 images but"));
}

TEST_F(TrainInputsTest, OutputsThatAreOneFileAreRefusedBeforeTraining) {
  WriteSplit("train", 64, 64);
  WriteSplit("t10k", 10, 10);
  const std::string ckpt = Write("model.ckpt", "the trained model");
  ASSERT_EQ(Train({"--checkpoint", ckpt, "--inference-graph", ckpt}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("--inference-graph '" + ckpt + "' is the same file as --checkpoint"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("epoch")));
  EXPECT_EQ(Read(ckpt), "the trained model");
  // Through a symlink, and onto the data itself.
  fs::create_symlink(ckpt, Path("latest"));
  ASSERT_EQ(Train({"--checkpoint", ckpt, "--frozen-graph", Path("latest")}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("is the same file as --checkpoint"));
  ASSERT_EQ(Train({"--checkpoint", Path("data/train-labels-idx1-ubyte.gz")}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("is the same file as the data file"));
  EXPECT_EQ(Read(ckpt), "the trained model");
}

TEST_F(TrainInputsTest, OutputsThatCannotBeWrittenAreRefusedBeforeTraining) {
  WriteSplit("train", 64, 64);
  WriteSplit("t10k", 10, 10);
  ASSERT_EQ(Train({"--checkpoint", "/dev/null"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("it is a character device"));
  ASSERT_EQ(Train({"--trace", Path("no/such/folder/trace.json")}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("NotFound"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("epoch")));
}

TEST_F(TrainInputsTest, FlagsAreJudgedByTheirOwnRules) {
  // A large number of epochs is a long training, not an unknown flag.
  EXPECT_EQ(Run({"train", "--epochs", "5000", "--data", Path("nowhere")}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("NotFound"));
  EXPECT_EQ(Run({"train", "--epochs", "5000000000"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--epochs takes a 32-bit integer, got '5000000000'"));
  EXPECT_EQ(Run({"train", "--epochs"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--epochs needs a value"));
  EXPECT_EQ(Run({"train", "--bogus", "1"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("unexpected argument '--bogus'"));
  EXPECT_EQ(Run({"train", "--threads", "100000"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("--threads must be 0 (all cores) to 1024"));
}

TEST_F(TrainInputsTest, AMissingFeedFileIsNamed) {
  const std::string graph = Write("g.json", R"({"nodes": [
    {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [1]}},
    {"name": "y", "op": "Identity", "inputs": ["x"]}]})");
  EXPECT_EQ(Run({"run", graph, "--fetch", "y", "--feed", "x=" + Path("missing.json")}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("NotFound: Cannot read the feed for 'x' '" + Path("missing.json") + "'"));
}

}  // namespace
}  // namespace tessera::testing
