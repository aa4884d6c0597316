// SavedModels TensorFlow 2.21 wrote (tests/testdata/saved_models: a TF2 tf.Module, a TF1
// Builder's with reference variables, an init op and an asset, Keras 3's model.export),
// loaded and run by signature, with TensorFlow's outputs; and what is wrong with a
// SavedModel named: a tag set or signature that is not there, a damaged saved_model.pb or
// variables/, a feed of the wrong dtype.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "saved_model/saved_model.h"
#include "runtime/freeze.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kDir = std::string(TESSERA_TEST_DATA_DIR) + "/saved_models/";

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Tensor FloatsFromJson(const nlohmann::json& j) {
  std::vector<int64_t> dims;
  std::vector<float> flat;
  std::function<void(const nlohmann::json&, size_t)> walk = [&](const nlohmann::json& v, size_t depth) {
    if (!v.is_array()) {
      flat.push_back(v.get<float>());
      return;
    }
    if (dims.size() == depth) dims.push_back(static_cast<int64_t>(v.size()));
    for (const auto& e : v) walk(e, depth + 1);
  };
  walk(j, 0);
  return Tensor::FromVector<float>(flat, TensorShape(std::span<const int64_t>(dims)));
}

void LoadRunAndCompare(const std::string& name, bool freeze) {
  SCOPED_TRACE(freeze ? "frozen" : "variables live");
  StatusOr<std::unique_ptr<SavedModelBundle>> model =
      LoadSavedModel(kDir + name, {"serve"}, SessionConfig(), LoadOptions{.freeze_variables = freeze});
  ASSERT_TRUE(model.ok()) << model.status();
  const nlohmann::json expected = nlohmann::json::parse(Read(kDir + name + ".json"));
  std::vector<std::pair<std::string, Tensor>> inputs;
  for (const auto& [key, value] : expected["inputs"].items()) inputs.emplace_back(key, FloatsFromJson(value));
  std::vector<std::string> keys;
  for (const auto& [key, value] : expected["outputs"].items()) keys.push_back(key);
  std::vector<Tensor> out;
  Status s = (*model)->Run(expected["signature"], inputs, keys, &out);
  ASSERT_TRUE(s.ok()) << s;
  for (size_t i = 0; i < keys.size(); ++i) {
    const Tensor want = FloatsFromJson(expected["outputs"][keys[i]]);
    ASSERT_EQ(out[i].shape(), want.shape()) << keys[i];
    for (int64_t k = 0; k < want.NumElements(); ++k) {
      EXPECT_NEAR(out[i].data<float>()[k], want.data<float>()[k], 1e-5) << keys[i] << "[" << k << "]";
    }
  }
}

// Loaded frozen (the default) and with its variables live, the model gives TensorFlow's outputs.
void LoadRunAndCompare(const std::string& name) {
  LoadRunAndCompare(name, true);
  LoadRunAndCompare(name, false);
}

int CountOps(const Session& session, std::string_view op) {
  const GraphSpec def = session.graph().ToSpec();
  return static_cast<int>(std::count_if(def.nodes.begin(), def.nodes.end(), [&](const NodeSpec& n) { return n.op == op; }));
}

// By default the loaded session runs the signatures' frozen graph: no variables, and nothing
// of the saver; with freeze_variables off it holds them.
TEST(SavedModelTest, LoadingFreezesTheVariablesUnlessToldNotTo) {
  StatusOr<std::unique_ptr<SavedModelBundle>> frozen = LoadSavedModel(kDir + "keras_export", {"serve"});
  StatusOr<std::unique_ptr<SavedModelBundle>> live =
      LoadSavedModel(kDir + "keras_export", {"serve"}, SessionConfig(), LoadOptions{.freeze_variables = false});
  ASSERT_TRUE(frozen.ok()) << frozen.status();
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ(CountOps((*frozen)->session(), "VarHandleOp"), 0);
  EXPECT_EQ(CountOps((*frozen)->session(), "RestoreV2"), 0);
  EXPECT_GT(CountOps((*live)->session(), "VarHandleOp"), 0);
  EXPECT_EQ(CountOps((*live)->session(), "RestoreV2"), 1);
}

TEST(SavedModelTest, ATf2ModulesSignatureGivesTensorFlowsOutputs) { LoadRunAndCompare("tf2_module"); }
TEST(SavedModelTest, ATf1BuildersModelRestoresRunsItsInitOpAndGivesTensorFlowsOutputs) {
  LoadRunAndCompare("tf1_builder");
}
TEST(SavedModelTest, AKerasExportGivesTensorFlowsOutputs) { LoadRunAndCompare("keras_export"); }

// A TF2 SavedModel's resource variables frozen into constants: the frozen graph alone, in a
// session of its own that restores nothing, gives the signature's outputs.
TEST(SavedModelTest, AFrozenTf2SignatureNeedsNoVariables) {
  StatusOr<std::unique_ptr<SavedModelBundle>> model = LoadSavedModel(kDir + "tf2_module", {"serve"});
  ASSERT_TRUE(model.ok()) << model.status();
  StatusOr<const SignatureInfo*> sig = (*model)->Signature("serving_default");
  ASSERT_TRUE(sig.ok());
  std::vector<std::string> fetches;
  for (const SignatureTensor& t : (*sig)->outputs) fetches.push_back(t.tensor);
  StatusOr<GraphSpec> frozen = FreezeGraph((*model)->session(), fetches);
  ASSERT_TRUE(frozen.ok()) << frozen.status();
  for (const NodeSpec& n : frozen->nodes) {
    EXPECT_NE(n.op, "VarHandleOp") << n.name;
    EXPECT_NE(n.op, "ReadVariableOp") << n.name;
  }
  StatusOr<std::unique_ptr<Session>> session = Session::Create(SessionConfig(), *frozen);
  ASSERT_TRUE(session.ok()) << session.status();
  const Tensor x = Tensor::FromVector<float>({1, 2, 3, -1, 0.5f, 0}, TensorShape({2, 3}));
  std::vector<Tensor> frozen_out, live_out;
  ASSERT_TRUE((*session)->Run({{(*sig)->inputs[0].tensor, x}}, fetches, {}, &frozen_out).ok());
  ASSERT_TRUE((*model)->Run("serving_default", {{"x", x}}, {}, &live_out).ok());
  ASSERT_EQ(frozen_out.size(), live_out.size());
  for (size_t i = 0; i < live_out.size(); ++i) EXPECT_TRUE(frozen_out[i].Equals(live_out[i])) << fetches[i];
}

TEST(SavedModelTest, InspectListsTagSetsAndSignaturesWithTheirTensors) {
  StatusOr<std::vector<MetaGraphInfo>> info = InspectSavedModel(kDir + "tf2_module");
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->size(), 1u);
  EXPECT_EQ((*info)[0].tags, std::set<std::string>{"serve"});
  ASSERT_EQ((*info)[0].signatures.size(), 1u);
  const SignatureInfo& sig = (*info)[0].signatures[0];
  EXPECT_EQ(sig.key, "serving_default");
  ASSERT_EQ(sig.inputs.size(), 1u);
  EXPECT_EQ(sig.inputs[0].key, "x");
  EXPECT_EQ(sig.inputs[0].dtype, DataType::kFloat);
  EXPECT_EQ(sig.inputs[0].shape, TensorShape({-1, 3}));
  ASSERT_EQ(sig.outputs.size(), 2u);
  EXPECT_EQ(sig.outputs[0].key, "total");
  EXPECT_EQ(sig.outputs[1].key, "y");
}

TEST(SavedModelTest, AMissingTagSetOrSignatureListsThoseThatExist) {
  Status s = LoadSavedModel(kDir + "tf2_module", {"serve", "gpu"}).status();
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("no MetaGraph tagged {gpu, serve}; it has {serve}"));
  StatusOr<std::unique_ptr<SavedModelBundle>> model = LoadSavedModel(kDir + "tf2_module", {"serve"});
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<Tensor> out;
  s = (*model)->Run("predict", {}, {}, &out);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("no signature 'predict'; it has 'serving_default'"));
  s = (*model)->Run("serving_default", {{"x", Tensor::FromVector<int32_t>({1, 2, 3})}}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("Input 'x' of signature 'serving_default' is DT_FLOAT"));
  s = (*model)->Run("serving_default", {{"z", Tensor::Scalar<float>(1)}}, {}, &out);
  EXPECT_THAT(std::string(s.message()), HasSubstr("has no input 'z'; its inputs are 'x'"));
  s = (*model)->Run("serving_default", {}, {}, &out);
  EXPECT_THAT(std::string(s.message()), HasSubstr("Input 'x' of signature 'serving_default' is not fed"));
  EXPECT_EQ(LoadSavedModel("/nonexistent/model", {"serve"}).status().code(), Code::kNotFound);
}

class DamagedSavedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_saved_model_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(kDir + "tf2_module", dir_, fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& file, const std::string& bytes) {
    std::ofstream(dir_ / file, std::ios::binary | std::ios::trunc) << bytes;
  }
  fs::path dir_;
};

TEST_F(DamagedSavedModelTest, ATruncatedOrFlippedSavedModelPbIsAnErrorNamingTheFileAndOffset) {
  const std::string good = Read(dir_ / "saved_model.pb");
  Write("saved_model.pb", good.substr(0, good.size() / 2));
  Status s = LoadSavedModel(dir_.string(), {"serve"}).status();
  EXPECT_EQ(s.code(), Code::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("saved_model.pb"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("byte offset"));
  // Every byte flipped in turn: a Status or a model that runs, never a crash.
  for (size_t i = 0; i < good.size(); i += 97) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    Write("saved_model.pb", bad);
    StatusOr<std::unique_ptr<SavedModelBundle>> model = LoadSavedModel(dir_.string(), {"serve"});
    if (model.ok()) {
      std::vector<Tensor> out;
      (void)(*model)->Run("serving_default", {{"x", Tensor(DataType::kFloat, TensorShape({1, 3}))}}, {}, &out);
    }
  }
}

TEST_F(DamagedSavedModelTest, ADamagedVariablesIndexIsTheCheckpointReadersDataLoss) {
  std::string index = Read(dir_ / "variables/variables.index");
  index[index.size() / 3] ^= 0x10;
  Write("variables/variables.index", index);
  Status s = LoadSavedModel(dir_.string(), {"serve"}).status();
  EXPECT_EQ(s.code(), Code::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("variables.index"));
}

}  // namespace
}  // namespace tessera
