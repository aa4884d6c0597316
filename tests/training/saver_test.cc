// Saver: a restored session computes bit-identical outputs, mirrored copies all restore,
// checkpoints are TensorFlow's bundles (Tessera's old files still restore), and a damaged or
// mismatched checkpoint is a clear error that leaves the variables as they were.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "graph/builder/initializers.h"
#include "graph/serialize/tensor_bundle.h"
#include "kernels/util/checkpoint_file.h"
#include "tests/test_util.h"
#include "training/saver.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// y = x w + b with w, b and a second copy of w drawn afresh in each session.
struct Model {
  Scope root = Scope::NewRootScope();
  Output w, b, w_copy, y;
  Operation init;
  Saver saver;
  GraphSpec def;
};

std::unique_ptr<Model> BuildModel(TensorShape w_shape = TensorShape({3, 2})) {
  auto m = std::make_unique<Model>();
  Scope& root = m->root;
  m->w = ops::Variable(root.WithOpName("w"), w_shape, DataType::kFloat);
  m->w_copy = ops::Variable(root.WithOpName("w_copy"), w_shape, DataType::kFloat);
  m->b = ops::Variable(root.WithOpName("b"), TensorShape({2}), DataType::kFloat);
  auto init_w = ops::Assign(root, m->w, GlorotUniform(root, w_shape, DataType::kFloat));
  auto init_copy = ops::Assign(root, m->w_copy, GlorotUniform(root, w_shape, DataType::kFloat));
  auto init_b = ops::Assign(root, m->b, GlorotUniform(root, {2}, DataType::kFloat));
  m->init = ops::NoOp(root.WithOpName("init").WithControlDependencies({init_w.op(), init_copy.op(), init_b.op()}));
  std::vector<float> xs(2 * w_shape.dim(0));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.5f * static_cast<float>(i) - 1;
  auto x = ops::Const(root, Tensor::FromVector<float>(xs, TensorShape({2, w_shape.dim(0)})));
  m->y = ops::BiasAdd(root.WithOpName("y"), ops::MatMul(root, x, m->w), m->b);
  StatusOr<Saver> saver = Saver::Create(root, {{"w", {m->w, m->w_copy}}, {"b", {m->b}}});
  EXPECT_TRUE(saver.ok()) << saver.status();
  if (saver.ok()) m->saver = *saver;
  EXPECT_TRUE(root.ToSpec(&m->def).ok());
  return m;
}

std::unique_ptr<Session> Start(const Model& m) {
  auto s = Session::Create(SessionConfig(), m.def);
  EXPECT_TRUE(s.ok()) << s.status();
  std::vector<Tensor> out;
  EXPECT_TRUE((*s)->Run({}, {}, {m.init.name()}, &out).ok());
  return std::move(*s);
}

bool BitIdentical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

class SaverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_saver_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "model.ckpt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string path_;
};

TEST_F(SaverTest, ARestoredSessionComputesBitIdenticalOutputs) {
  auto m = BuildModel();
  auto first = Start(*m);
  const Tensor y1 = testing::Fetch(*first, "y");
  ASSERT_TRUE(m->saver.Save(*first, path_).ok());

  auto second = Start(*m);
  ASSERT_FALSE(BitIdentical(testing::Fetch(*second, "y"), y1)) << "fresh weights should differ";
  ASSERT_TRUE(m->saver.Restore(*second, path_).ok());
  EXPECT_TRUE(BitIdentical(testing::Fetch(*second, "y"), y1));
  // Both copies of w take the saved first copy.
  EXPECT_TRUE(BitIdentical(testing::Fetch(*second, "w_copy"), testing::Fetch(*first, "w")));
}

TEST_F(SaverTest, DamagedOrMismatchedCheckpointsLeaveTheVariablesAlone) {
  auto m = BuildModel();
  auto session = Start(*m);
  ASSERT_TRUE(m->saver.Save(*session, path_).ok());
  auto other = Start(*m);
  const Tensor before = testing::Fetch(*other, "y");

  const std::string data = path_ + ".data-00000-of-00001";
  std::string bytes;
  {
    std::ifstream in(data, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string flipped = bytes;
  flipped.back() ^= 1;
  std::ofstream(data, std::ios::binary) << flipped;
  Status st = m->saver.Restore(*other, path_);
  EXPECT_EQ(st.code(), Code::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("fails its checksum"));
  EXPECT_TRUE(BitIdentical(testing::Fetch(*other, "y"), before));

  std::ofstream(data, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  st = m->saver.Restore(*other, path_);
  EXPECT_EQ(st.code(), Code::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr(data));
  EXPECT_TRUE(BitIdentical(testing::Fetch(*other, "y"), before));

  EXPECT_EQ(m->saver.Restore(*other, path_ + ".missing").code(), Code::kNotFound);

  // A checkpoint of another model: w is [4, 2] there.
  auto wider = BuildModel(TensorShape({4, 2}));
  auto wide_session = Start(*wider);
  ASSERT_TRUE(wider->saver.Save(*wide_session, path_).ok());
  st = m->saver.Restore(*other, path_);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("save/w/shape_check"));
  EXPECT_THAT(st.message(), HasSubstr("[4,2]"));
  EXPECT_TRUE(BitIdentical(testing::Fetch(*other, "y"), before));
  // The session still works, and a good checkpoint still restores.
  ASSERT_TRUE(m->saver.Save(*session, path_).ok());
  ASSERT_TRUE(m->saver.Restore(*other, path_).ok());
  EXPECT_TRUE(BitIdentical(testing::Fetch(*other, "y"), testing::Fetch(*session, "y")));
}

TEST_F(SaverTest, ACheckpointIsATensorFlowBundleAndAFailedSaveKeepsTheLastOne) {
  auto m = BuildModel();
  auto session = Start(*m);
  ASSERT_TRUE(m->saver.Save(*session, path_).ok());
  StatusOr<std::unique_ptr<BundleReader>> r = BundleReader::Open(path_);
  ASSERT_TRUE(r.ok()) << r.status();
  StatusOr<Tensor> w = (*r)->Read("w", CpuAllocator());
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(BitIdentical(*w, testing::Fetch(*session, "w")));
  // Only the checkpoint's two files are left: the temporary bundle's folder is gone.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 2);

  // A save that fails (its variables were never initialized) leaves the checkpoint there.
  const std::string index = path_ + ".index";
  const auto before = fs::last_write_time(index);
  auto uninitialized = Session::Create(SessionConfig(), m->def);
  ASSERT_TRUE(uninitialized.ok());
  EXPECT_FALSE(m->saver.Save(**uninitialized, path_).ok());
  EXPECT_EQ(fs::last_write_time(index), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 2);
  auto other = Start(*m);
  ASSERT_TRUE(m->saver.Restore(*other, path_).ok());
  EXPECT_TRUE(BitIdentical(testing::Fetch(*other, "y"), testing::Fetch(*session, "y")));
}

TEST_F(SaverTest, ACheckpointInTesserasEarlierFormatStillRestores) {
  auto m = BuildModel();
  auto session = Start(*m);
  ASSERT_TRUE(WriteCheckpoint(path_, {{"w", testing::Fetch(*session, "w")}, {"b", testing::Fetch(*session, "b")}}).ok());
  auto other = Start(*m);
  ASSERT_TRUE(m->saver.Restore(*other, path_).ok());
  EXPECT_TRUE(BitIdentical(testing::Fetch(*other, "y"), testing::Fetch(*session, "y")));
}

// A checkpoint tf.train.Checkpoint wrote (tests/testdata/tf_checkpoints/make_checkpoints.py)
// keys its tensors by their owners' path; the Saver finds each variable by the name it had.
TEST_F(SaverTest, ATf2ObjectBasedCheckpointRestoresByTheNamesItsVariablesHad) {
  Scope root = Scope::NewRootScope();
  auto kernel = ops::Variable(root.WithOpName("kernel"), TensorShape({3, 2}), DataType::kFloat);
  auto bias = ops::Variable(root.WithOpName("bias"), TensorShape({2}), DataType::kFloat);
  auto step = ops::Variable(root.WithOpName("step"), TensorShape(), DataType::kInt64);
  StatusOr<Saver> saver =
      Saver::Create(root, {{"dense/kernel", {kernel}}, {"dense/bias", {bias}}, {"global_step", {step}}});
  ASSERT_TRUE(saver.ok()) << saver.status();
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  auto session = Session::Create(SessionConfig(), def);
  ASSERT_TRUE(session.ok()) << session.status();
  const std::string tf2 = std::string(TESSERA_TEST_DATA_DIR) + "/tf_checkpoints/tf2/ckpt-1";
  Status s = saver->Restore(**session, tf2);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(testing::Fetch(**session, "kernel").Equals(Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, TensorShape({3, 2}))));
  EXPECT_TRUE(testing::Fetch(**session, "bias").Equals(Tensor::FromVector<float>({0.5f, -0.5f})));
  EXPECT_TRUE(testing::Fetch(**session, "step").Equals(Tensor::Scalar<int64_t>(7)));
  // A name neither in the checkpoint nor in its object graph is still NotFound, naming it.
  StatusOr<Saver> other = Saver::Create(root, {{"dense/weights", {kernel}}});
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(root.ToSpec(&def).ok());
  session = Session::Create(SessionConfig(), def);
  ASSERT_TRUE(session.ok()) << session.status();
  s = other->Restore(**session, tf2);
  EXPECT_EQ(s.code(), Code::kNotFound) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("dense/weights"));
}

TEST_F(SaverTest, BadVariableListsAreErrors) {
  Scope root = Scope::NewRootScope();
  EXPECT_EQ(Saver::Create(root, {}).status().code(), Code::kInvalidArgument);
  EXPECT_THAT(Saver::Create(root, {{"w", {}}}).status().message(), HasSubstr("'w' has no copies"));
  auto f = ops::Variable(root, TensorShape({1}), DataType::kFloat);
  auto d = ops::Variable(root, TensorShape({1}), DataType::kDouble);
  EXPECT_THAT(Saver::Create(root, {{"w", {f, d}}}).status().message(), HasSubstr("differ in dtype"));
}

}  // namespace
}  // namespace tessera
