// The checkpoint file format: round trips of every savable dtype, and every kind of damage
// or failure a clear Status that leaves a previous checkpoint whole.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kernels/util/checkpoint_file.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class CheckpointFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "model.ckpt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Bytes() const {
    std::ifstream in(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void Overwrite(const std::string& bytes) const { std::ofstream(path_, std::ios::binary) << bytes; }

  fs::path dir_;
  std::string path_;
};

std::vector<std::pair<std::string, Tensor>> SomeTensors() {
  return {{"conv2d/kernel", Tensor::FromVector<float>({1.5f, -2, 3e-30f, 4}, TensorShape({2, 2}))},
          {"step", Tensor::Scalar<int64_t>(int64_t{1} << 40)},
          {"mask", Tensor::FromVector<bool>({true, false, true})},
          {"x", Tensor::FromVector<double>({3.25})},
          {"empty", Tensor(DataType::kFloat, TensorShape({0, 3}))}};
}

TEST_F(CheckpointFileTest, RoundTripIsBitExact) {
  const auto tensors = SomeTensors();
  ASSERT_TRUE(WriteCheckpoint(path_, tensors).ok());
  StatusOr<std::vector<CheckpointEntry>> index = ReadCheckpointIndex(path_);
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->size(), tensors.size());
  EXPECT_EQ((*index)[0].name, "conv2d/kernel");
  EXPECT_EQ((*index)[0].shape, TensorShape({2, 2}));
  std::vector<std::string> names = {"x", "conv2d/kernel", "mask", "step", "empty"};
  StatusOr<std::vector<Tensor>> got = ReadCheckpoint(path_, names);
  ASSERT_TRUE(got.ok()) << got.status();
  for (size_t i = 0; i < names.size(); ++i) {
    const Tensor& want = std::find_if(tensors.begin(), tensors.end(), [&](auto& t) { return t.first == names[i]; })->second;
    EXPECT_EQ((*got)[i].dtype(), want.dtype()) << names[i];
    EXPECT_EQ((*got)[i].shape(), want.shape()) << names[i];
    EXPECT_EQ(std::memcmp((*got)[i].raw_data(), want.raw_data(), want.TotalBytes()), 0) << names[i];
  }
  EXPECT_EQ(ReadCheckpoint(path_, {"nope"}).status().code(), Code::kNotFound);
}

TEST_F(CheckpointFileTest, DamageIsDataLossNamingWhatIsDamaged) {
  ASSERT_TRUE(WriteCheckpoint(path_, SomeTensors()).ok());
  const std::string good = Bytes();

  std::string flipped = good;
  flipped[good.size() - 20] ^= 0x10;  // inside the data of the last non-empty tensor
  Overwrite(flipped);
  Status st = ReadCheckpoint(path_, {"conv2d/kernel", "step", "mask", "x"}).status();
  EXPECT_EQ(st.code(), Code::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("fails its checksum"));

  Overwrite(good.substr(0, good.size() - 3));
  st = ReadCheckpoint(path_, {"x"}).status();
  EXPECT_EQ(st.code(), Code::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("truncated"));

  Overwrite(good.substr(0, 30));
  EXPECT_EQ(ReadCheckpointIndex(path_).status().code(), Code::kDataLoss);

  std::string header = good;
  header.replace(header.find("float32"), 7, "floaty2");
  Overwrite(header);
  st = ReadCheckpointIndex(path_).status();
  EXPECT_EQ(st.code(), Code::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("conv2d/kernel"));

  // A header field of the wrong JSON type (found by the fuzzer) is damage, not an exception.
  uint64_t good_header_bytes = 0;
  std::memcpy(&good_header_bytes, good.data() + 8, 8);
  std::string wrong_header = good.substr(16, good_header_bytes);
  wrong_header.replace(wrong_header.find("\"format\":1"), 10, "\"format\":[1]");
  const uint64_t wrong_header_bytes = wrong_header.size();
  Overwrite(good.substr(0, 8) + std::string(reinterpret_cast<const char*>(&wrong_header_bytes), 8) + wrong_header +
            good.substr(16 + good_header_bytes));
  st = ReadCheckpointIndex(path_).status();
  EXPECT_EQ(st.code(), Code::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("damaged header"));

  Overwrite("not a checkpoint at all");
  st = ReadCheckpointIndex(path_).status();
  EXPECT_EQ(st.code(), Code::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("not a Tessera checkpoint"));

  Overwrite("");
  EXPECT_EQ(ReadCheckpointIndex(path_).status().code(), Code::kDataLoss);
  EXPECT_EQ(ReadCheckpointIndex((dir_ / "missing.ckpt").string()).status().code(), Code::kNotFound);
}

TEST_F(CheckpointFileTest, AFailedSaveLeavesThePreviousCheckpointAndNoTemporaryFile) {
  ASSERT_TRUE(WriteCheckpoint(path_, SomeTensors()).ok());
  const std::string good = Bytes();
  Status st = WriteCheckpoint(path_, {{"w", Tensor::FromVector<float>({1})}, {"s", Tensor::Scalar(std::string("x"))}});
  EXPECT_EQ(st.code(), Code::kUnimplemented);
  st = WriteCheckpoint(path_, {{"w", Tensor::FromVector<float>({1})}, {"w", Tensor::FromVector<float>({2})}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(Bytes(), good);
  st = WriteCheckpoint((dir_ / "no_such_dir" / "model.ckpt").string(), SomeTensors());
  EXPECT_EQ(st.code(), Code::kNotFound);
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1);
}

TEST_F(CheckpointFileTest, ReadersNeverSeeAHalfWrittenFileWhileWritersReplaceIt) {
  ASSERT_TRUE(WriteCheckpoint(path_, SomeTensors()).ok());
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      Tensor big(DataType::kFloat, TensorShape({4096 * (w + 1)}));
      std::fill(big.data<float>(), big.data<float>() + big.NumElements(), static_cast<float>(w));
      while (!stop.load()) ASSERT_TRUE(WriteCheckpoint(path_, {{"big", big}, {"x", Tensor::Scalar(1.0)}}).ok());
    });
  }
  int reads = 0;
  for (; reads < 200; ++reads) {
    StatusOr<std::vector<Tensor>> got = ReadCheckpoint(path_, {"x"});
    ASSERT_TRUE(got.ok()) << got.status();
  }
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_EQ(reads, 200);
}

}  // namespace
}  // namespace tessera
