// TensorFlow's checkpoint format: Tessera's bundles round-trip every dtype a checkpoint can
// hold, checkpoints TensorFlow 2.21 wrote (tests/testdata/tf_checkpoints) read with their
// values, and damaged or hostile files are errors naming the checkpoint and the tensor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "graph/protos/tensor_bundle.pb.h"
#include "graph/serialize/sstable.h"
#include "graph/serialize/tensor_bundle.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kTfCheckpoints = std::string(TESSERA_TEST_DATA_DIR) + "/tf_checkpoints";

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void Spill(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

class TensorBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_bundle_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    prefix_ = (dir_ / "model.ckpt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A bundle of one tensor of each dtype Tessera saves.
  std::vector<std::pair<std::string, Tensor>> EveryDtype() const {
    Tensor half(DataType::kHalf, TensorShape({3}));
    Tensor bf16(DataType::kBFloat16, TensorShape({2}));
    for (int i = 0; i < 3; ++i) half.data<Half>()[i] = FloatToHalf(0.5f * i);
    for (int i = 0; i < 2; ++i) bf16.data<BFloat16>()[i] = FloatToBFloat16(-3.0f * i);
    return {{"f32", Tensor::FromVector<float>({1.5f, -2, 3, 4, 5, 6}, TensorShape({2, 3}))},
            {"f64", Tensor::FromVector<double>({0.25, 1e300})},
            {"f16", half},
            {"bf16", bf16},
            {"i32", Tensor::FromVector<int32_t>({-7, 0, 7})},
            {"i64", Tensor::FromVector<int64_t>({int64_t{1} << 40})},
            {"u8", Tensor::FromVector<uint8_t>({0, 255})},
            {"b", Tensor::FromVector<bool>({true, false, true})},
            {"s", Tensor::FromVector<std::string>({"", "tessera", std::string(300, 'x')})},
            {"scalar", Tensor::Scalar<float>(2.5f)},
            {"empty", Tensor(DataType::kFloat, TensorShape({0, 4}))},
            {"empty_strings", Tensor(DataType::kString, TensorShape({0}))}};
  }

  void WriteEveryDtype() const {
    StatusOr<std::unique_ptr<BundleWriter>> w = BundleWriter::Open(prefix_);
    ASSERT_TRUE(w.ok()) << w.status();
    for (const auto& [name, t] : EveryDtype()) ASSERT_TRUE((*w)->Add(name, t).ok()) << name;
    ASSERT_TRUE((*w)->Finish().ok());
  }

  // Rewrites the index with `edit` applied to the named tensor's entry.
  void EditEntry(const std::string& name, const std::function<void(tfgraph::BundleEntryProto*)>& edit) const {
    const std::string index = BundleIndexFile(prefix_);
    StatusOr<std::vector<std::pair<std::string, std::string>>> table = ReadSstable(Slurp(index), index);
    ASSERT_TRUE(table.ok()) << table.status();
    SstableBuilder b;
    for (auto& [key, value] : *table) {
      if (key == name) {
        tfgraph::BundleEntryProto e;
        ASSERT_TRUE(e.ParseFromString(value));
        edit(&e);
        value = e.SerializeAsString();
      }
      ASSERT_TRUE(b.Add(key, value).ok());
    }
    Spill(index, b.Finish());
  }

  fs::path dir_;
  std::string prefix_;
};

TEST_F(TensorBundleTest, EveryDtypeRoundTrips) {
  WriteEveryDtype();
  EXPECT_TRUE(fs::exists(prefix_ + ".index"));
  EXPECT_TRUE(fs::exists(prefix_ + ".data-00000-of-00001"));
  StatusOr<std::unique_ptr<BundleReader>> r = BundleReader::Open(prefix_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->entries().size(), EveryDtype().size());
  for (const auto& [name, want] : EveryDtype()) {
    StatusOr<Tensor> got = (*r)->Read(name, CpuAllocator());
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    EXPECT_EQ(got->dtype(), want.dtype()) << name;
    EXPECT_EQ(got->shape(), want.shape()) << name;
    EXPECT_TRUE(got->Equals(want)) << name << ": " << got->DebugString();
  }
  EXPECT_EQ((*r)->Read("missing", CpuAllocator()).status().code(), Code::kNotFound);
}

TEST_F(TensorBundleTest, TheWriterRefusesWhatACheckpointCannotHold) {
  StatusOr<std::unique_ptr<BundleWriter>> w = BundleWriter::Open(prefix_);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->Add("", Tensor::Scalar<float>(1)).code(), Code::kInvalidArgument);
  ASSERT_TRUE((*w)->Add("a", Tensor::Scalar<float>(1)).ok());
  EXPECT_EQ((*w)->Add("a", Tensor::Scalar<float>(2)).code(), Code::kInvalidArgument);
  EXPECT_EQ((*w)->Add("h", Tensor(DataType::kResource, TensorShape())).code(), Code::kInvalidArgument);
}

TEST_F(TensorBundleTest, AWriterWithoutFinishLeavesNothing) {
  {
    StatusOr<std::unique_ptr<BundleWriter>> w = BundleWriter::Open(prefix_);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Add("a", Tensor::Scalar<float>(1)).ok());
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST(TensorFlowCheckpointTest, AV1SaversCheckpointReadsWithItsValues) {
  StatusOr<std::unique_ptr<BundleReader>> r = BundleReader::Open(kTfCheckpoints + "/v1/model.ckpt");
  ASSERT_TRUE(r.ok()) << r.status();
  auto read = [&](const std::string& name) {
    StatusOr<Tensor> t = (*r)->Read(name, CpuAllocator());
    EXPECT_TRUE(t.ok()) << name << ": " << t.status();
    return t.ok() ? *t : Tensor();
  };
  Tensor f32 = read("f32");
  ASSERT_EQ(f32.shape(), TensorShape({2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f32.data<float>()[i], i / 4.0f);
  EXPECT_TRUE(read("f64").Equals(Tensor::FromVector<double>({-1.5, -0.5, 0.5})));
  Tensor f16 = read("f16"), bf16 = read("bf16");
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(HalfToFloat(f16.data<Half>()[i]), i / 2.0f);
    EXPECT_EQ(BFloat16ToFloat(bf16.data<BFloat16>()[i]), 3.0f * i);
  }
  EXPECT_TRUE(read("i32").Equals(Tensor::FromVector<int32_t>({0, -7, -14, -21, -28})));
  EXPECT_TRUE(read("i64").Equals(Tensor::FromVector<int64_t>({int64_t{1} << 40, -3})));
  EXPECT_TRUE(read("u8").Equals(Tensor::FromVector<uint8_t>({250, 251, 252, 253, 254, 255})));
  EXPECT_TRUE(read("b").Equals(Tensor::FromVector<bool>({true, false, true})));
  EXPECT_TRUE(read("s").Equals(Tensor::FromVector<std::string>({"", "tessera", std::string(200, 'x')})));
  EXPECT_TRUE(read("scalar").Equals(Tensor::Scalar<float>(2.5f)));
  // A dtype Tessera lacks is listed and refused by name; the rest still read.
  StatusOr<BundleEntry> i8 = (*r)->Find("i8");
  ASSERT_TRUE(i8.ok());
  EXPECT_EQ(i8->dtype, DataType::kInvalid);
  Status s = (*r)->Read("i8", CpuAllocator()).status();
  EXPECT_EQ(s.code(), Code::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'i8'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("DT_INT8"));
}

TEST(TensorFlowCheckpointTest, ATf2CheckpointNamesItsVariablesThroughTheObjectGraph) {
  StatusOr<std::unique_ptr<BundleReader>> r = BundleReader::Open(kTfCheckpoints + "/tf2/ckpt-1");
  ASSERT_TRUE(r.ok()) << r.status();
  StatusOr<Tensor> kernel = (*r)->Read("model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE", CpuAllocator());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_TRUE(kernel->Equals(Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, TensorShape({3, 2}))));
  StatusOr<Tensor> step = (*r)->Read("model/step/.ATTRIBUTES/VARIABLE_VALUE", CpuAllocator());
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_TRUE(step->Equals(Tensor::Scalar<int64_t>(7)));
  // The object graph says what each variable was called when saved.
  StatusOr<std::map<std::string, std::string>> keys = ObjectGraphKeys(**r);
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(*keys, (std::map<std::string, std::string>{
                       {"dense/bias", "model/dense/bias/.ATTRIBUTES/VARIABLE_VALUE"},
                       {"dense/kernel", "model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE"},
                       {"global_step", "model/step/.ATTRIBUTES/VARIABLE_VALUE"}}));
  // A name-based checkpoint has no object graph.
  StatusOr<std::unique_ptr<BundleReader>> v1 = BundleReader::Open(kTfCheckpoints + "/v1/model.ckpt");
  ASSERT_TRUE(v1.ok()) << v1.status();
  StatusOr<std::map<std::string, std::string>> none = ObjectGraphKeys(**v1);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
}

TEST_F(TensorBundleTest, EveryTruncationOrFlippedByteOfTheFilesIsAnErrorNotAWrongValue) {
  WriteEveryDtype();
  const std::string index = prefix_ + ".index", data = prefix_ + ".data-00000-of-00001";
  const std::string good_index = Slurp(index), good_data = Slurp(data);
  auto read_all = [&]() -> Status {
    ASSIGN_OR_RETURN(std::unique_ptr<BundleReader> r, BundleReader::Open(prefix_));
    for (const auto& [name, want] : EveryDtype()) {
      ASSIGN_OR_RETURN(Tensor got, r->Read(name, CpuAllocator()));
      if (!got.Equals(want)) return errors::Internal("tensor '", name, "' read back a wrong value");
    }
    return Status::OK();
  };
  for (size_t i = 0; i < good_index.size(); ++i) {
    std::string bad = good_index;
    bad[i] = static_cast<char>(bad[i] ^ 0x41);
    Spill(index, bad);
    Status s = read_all();
    EXPECT_NE(s.code(), Code::kInternal) << "index byte " << i << ": " << s;
  }
  Spill(index, good_index);
  for (size_t i = 0; i < good_data.size(); ++i) {
    std::string bad = good_data;
    bad[i] = static_cast<char>(bad[i] ^ 0x41);
    Spill(data, bad);
    Status s = read_all();
    EXPECT_EQ(s.code(), Code::kDataLoss) << "data byte " << i << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(prefix_)) << s;
  }
  Spill(data, good_data.substr(0, good_data.size() - 1));
  Status s = BundleReader::Open(prefix_).status();
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("tensor '"));
}

TEST_F(TensorBundleTest, AnEntryPointingPastItsShardIsRefusedWhenTheIndexOpens) {
  WriteEveryDtype();
  EditEntry("f32", [](tfgraph::BundleEntryProto* e) { e->set_offset(int64_t{1} << 40); });
  Status s = BundleReader::Open(prefix_).status();
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_THAT(std::string(s.message()), HasSubstr("tensor 'f32'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("data-00000-of-00001"));
}

TEST_F(TensorBundleTest, HostileEntriesAreRefusedBeforeAnyAllocation) {
  WriteEveryDtype();
  // A billion strings claimed in a few bytes; a shape whose product overflows; a size that
  // disagrees with the shape; a shard that does not exist.
  EditEntry("s", [](tfgraph::BundleEntryProto* e) { e->mutable_shape()->mutable_dim(0)->set_size(1'000'000'000); });
  EXPECT_EQ(BundleReader::Open(prefix_).status().code(), Code::kDataLoss);
  WriteEveryDtype();
  EditEntry("f32", [](tfgraph::BundleEntryProto* e) {
    e->mutable_shape()->mutable_dim(0)->set_size(int64_t{1} << 40);
    e->mutable_shape()->mutable_dim(1)->set_size(int64_t{1} << 40);
  });
  EXPECT_EQ(BundleReader::Open(prefix_).status().code(), Code::kDataLoss);
  WriteEveryDtype();
  EditEntry("i32", [](tfgraph::BundleEntryProto* e) { e->set_size(8); });
  EXPECT_EQ(BundleReader::Open(prefix_).status().code(), Code::kDataLoss);
  WriteEveryDtype();
  EditEntry("i32", [](tfgraph::BundleEntryProto* e) { e->set_shard_id(3); });
  EXPECT_EQ(BundleReader::Open(prefix_).status().code(), Code::kDataLoss);
}

TEST_F(TensorBundleTest, MissingOrOddFilesAreErrorsNamingThem) {
  Status s = BundleReader::Open(prefix_).status();
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr(prefix_ + ".index"));
  WriteEveryDtype();
  fs::remove(prefix_ + ".data-00000-of-00001");
  s = BundleReader::Open(prefix_).status();
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr(".data-00000-of-00001"));
  // A FIFO as the index must not block the reader.
  fs::remove(prefix_ + ".index");
  ASSERT_EQ(::mkfifo((prefix_ + ".index").c_str(), 0600), 0);
  EXPECT_FALSE(BundleReader::Open(prefix_).ok());
}

TEST_F(TensorBundleTest, MergingMakesOneCheckpointOfSeveralAndRemovesTheParts) {
  const std::string part_dir = (dir_ / "model.ckpt_temp").string();
  fs::create_directories(part_dir);
  const std::vector<std::string> parts = {part_dir + "/part-00000-of-00002", part_dir + "/part-00001-of-00002"};
  for (int p = 0; p < 2; ++p) {
    StatusOr<std::unique_ptr<BundleWriter>> w = BundleWriter::Open(parts[p]);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Add(p == 0 ? "a" : "b", Tensor::FromVector<float>({1.0f * p, 2})).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  ASSERT_TRUE(MergeBundles(parts, prefix_, /*delete_old_dirs=*/true).ok());
  EXPECT_FALSE(fs::exists(part_dir));
  EXPECT_TRUE(fs::exists(prefix_ + ".data-00001-of-00002"));
  StatusOr<std::unique_ptr<BundleReader>> r = BundleReader::Open(prefix_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->num_shards(), 2);
  StatusOr<Tensor> b = (*r)->Read("b", CpuAllocator());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->Equals(Tensor::FromVector<float>({1, 2})));
}

TEST_F(TensorBundleTest, MergingTwoBundlesThatShareANameMovesNothing) {
  const std::vector<std::string> parts = {prefix_ + "_a", prefix_ + "_b"};
  for (const std::string& p : parts) {
    StatusOr<std::unique_ptr<BundleWriter>> w = BundleWriter::Open(p);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Add("same", Tensor::Scalar<float>(1)).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  Status s = MergeBundles(parts, prefix_, true);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'same'"));
  EXPECT_TRUE(fs::exists(parts[0] + ".data-00000-of-00001"));
  EXPECT_FALSE(fs::exists(prefix_ + ".index"));
}

}  // namespace
}  // namespace tessera
