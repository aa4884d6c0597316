#include "tools/cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tessera {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  int Run(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    return RunCli(args, out_, err_);
  }

  fs::path dir_;
  std::ostringstream out_, err_;
};

constexpr const char* kGraph = R"({"nodes": [
  {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [null, 2]}},
  {"name": "w", "op": "Const", "device": "/cpu:1",
   "attrs": {"value": {"dtype": "float32", "shape": [2, 1], "data": [1, 2]}, "dtype": "float32"}},
  {"name": "y", "op": "MatMul", "inputs": ["x", "w"]},
  {"name": "two", "op": "Const", "attrs": {"value": {"dtype": "int32", "shape": [2], "data": [7, 8]}, "dtype": "int32"}}
]})";

TEST_F(CliTest, RunPrintsFetchesAsJsonAndThePlacementLog) {
  std::string g = Write("g.json", kGraph);
  std::string cfg = Write("c.json", R"({"device_count": {"CPU": 2}})");
  std::string feed = Write("x.json", R"({"dtype": "float32", "shape": [1, 2], "data": [3, 4]})");
  std::string trace = (dir_ / "trace.json").string();
  int rc = Run({"run", g, "--fetch", "y,two", "--feed", "x=" + feed, "--config", cfg,
                "--log-device-placement", "--trace", trace});
  ASSERT_EQ(rc, 0) << err_.str();
  auto j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j["y"]["data"][0], 11.0);
  EXPECT_EQ(j["y"]["shape"], nlohmann::json({1, 1}));
  EXPECT_EQ(j["two"]["dtype"], "int32");
  EXPECT_THAT(err_.str(), HasSubstr("Device mapping:\n"));
  EXPECT_THAT(err_.str(), HasSubstr("w: (Const): /job:localhost/replica:0/task:0/device:CPU:1\n"));
  std::ifstream t(trace);
  auto tj = nlohmann::json::parse(t);
  EXPECT_FALSE(tj["traceEvents"].empty());
}

TEST_F(CliTest, ErrorsPrintCodeAndMessageWithExitOne) {
  std::string g = Write("g.json", kGraph);
  EXPECT_EQ(Run({"run", g, "--fetch", "y"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("InvalidArgument: Cannot assign a device for operation w"));
  std::string cfg = Write("c.json", R"({"device_count": {"CPU": 2}})");
  EXPECT_EQ(Run({"run", g, "--fetch", "y", "--config", cfg}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("InvalidArgument: You must feed a value for placeholder tensor 'x'"));
  EXPECT_EQ(Run({"run", g, "--fetch", "y", "--config", cfg, "--feed",
                 "x={\"dtype\": \"int32\", \"shape\": [1, 2], \"data\": [1, 2]}"}),
            1);
  EXPECT_THAT(err_.str(), HasSubstr("Cannot feed a int32 tensor"));
  EXPECT_EQ(Run({"run", g, "--fetch", "nope", "--config", cfg}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("NotFound: "));
  std::string bad = Write("bad.json", R"({"nodes": [{"name": "a", "op": "Nope"}]})");
  EXPECT_EQ(Run({"run", bad, "--fetch", "a"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("Op type not registered 'Nope'"));
  EXPECT_EQ(Run({"run", (dir_ / "missing.json").string(), "--fetch", "a"}), 1);
  std::string dev = Write("dev.json", R"({"nodes": [{"name": "a", "op": "NoOp", "device": "/gpu:x"}]})");
  EXPECT_EQ(Run({"run", dev, "--target", "a"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("Malformed device specification '/gpu:x'"));
}

TEST_F(CliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Run({}), 2);
  EXPECT_EQ(Run({"frob"}), 2);
  EXPECT_EQ(Run({"run", "g.json"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("usage:"));
  EXPECT_EQ(Run({"run", "g.json", "--feed", "novalue", "--fetch", "y"}), 2);
}

TEST_F(CliTest, PlaceAndDot) {
  std::string g = Write("g.json", kGraph);
  std::string cfg = Write("c.json", R"({"device_count": {"CPU": 2}})");
  ASSERT_EQ(Run({"place", g, "--config", cfg}), 0) << err_.str();
  auto j = nlohmann::json::parse(out_.str());
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[1]["node"], "w");
  EXPECT_EQ(j[1]["reason"], "requested");
  ASSERT_EQ(Run({"dot", g, "--config", cfg}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("digraph tessera"));
  EXPECT_THAT(out_.str(), HasSubstr("label=\"/job:localhost/replica:0/task:0/device:CPU:1\""));
  // w (CPU:1) feeds y (CPU:0) through a _Send/_Recv pair drawn across the clusters.
  EXPECT_THAT(out_.str(), HasSubstr("\"w\" -> \"_send_w_0\""));
  EXPECT_THAT(out_.str(), HasSubstr("\"_send_w_0\" -> \"_recv_w_0\" [style=bold, color=\"#d62728\", label=\"w:0\"]"));
  EXPECT_THAT(out_.str(), HasSubstr("\"_recv_w_0\" -> \"y\""));
}

TEST_F(CliTest, RunShowsThePartitions) {
  std::string g = Write("g.json", kGraph);
  std::string cfg = Write("c.json", R"({"device_count": {"CPU": 2}})");
  ASSERT_EQ(Run({"run", g, "--fetch", "y", "--config", cfg, "--show-partitions", "--feed",
                 R"(x={"dtype": "float32", "shape": [1, 2], "data": [3, 4]})"}),
            0)
      << err_.str();
  EXPECT_THAT(err_.str(), HasSubstr("Partition /job:localhost/replica:0/task:0/device:CPU:1: 2 nodes\n"
                                    "    nodes: w\n"
                                    "    send w:0 -> /job:localhost/replica:0/task:0/device:CPU:0 (_send_w_0)\n"));
  EXPECT_THAT(err_.str(), HasSubstr("    recv w:0 <- /job:localhost/replica:0/task:0/device:CPU:1 (_recv_w_0)\n"));
}

TEST_F(CliTest, DevicesListsEachDeviceAndWhyThereIsNoGpu) {
  ASSERT_EQ(Run({"devices"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("/job:localhost/replica:0/task:0/device:CPU:0  CPU  memory: "));
  if (out_.str().find("device:GPU:0  GPU") == std::string::npos) {
    EXPECT_THAT(out_.str(), HasSubstr("no GPU device: "));
  } else {
    EXPECT_THAT(out_.str(), HasSubstr("compute capability: "));
  }
  EXPECT_EQ(Run({"devices", "--bogus"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("unexpected argument '--bogus'"));
}

// `--device gpu` alone trains on one GPU (on CPUs the default is the seeds' two towers):
// where there is none, the error names one.
TEST_F(CliTest, TrainOnAGpuDefaultsToOneGpu) {
  ASSERT_EQ(Run({"devices"}), 0) << err_.str();
  if (out_.str().find("device:GPU:0  GPU") != std::string::npos) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(Run({"train", "--device", "gpu", "--train-limit", "256", "--test-limit", "128"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("--device gpu --devices 1 needs 1 GPUs"));
}

// TensorFlow's GPU options are taken by `run --config` on any machine; a graph that does not
// ask for a GPU runs with or without one, and a bad option is a clear error.
TEST_F(CliTest, RunTakesTheGpuOptions) {
  std::string g = Write("g.json", kGraph);
  std::string config = Write("gpu.json", R"({"allow_soft_placement": true, "gpu_options": {"allow_growth": true,
      "per_process_gpu_memory_fraction": 0.5, "allow_tf32": false}})");
  ASSERT_EQ(Run({"run", g, "--fetch", "two", "--config", config}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("[7,8]"));
  std::string bad = Write("bad.json", R"({"gpu_options": {"visible_device_list": "0,x"}})");
  EXPECT_EQ(Run({"run", g, "--fetch", "two", "--config", bad}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("gpu_options.visible_device_list '0,x'"));
}

TEST_F(CliTest, ExportFillsInEveryAttr) {
  std::string g = Write("g.json", kGraph);
  ASSERT_EQ(Run({"export", g}), 0) << err_.str();
  auto j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j["nodes"][2]["name"], "y");
  EXPECT_EQ(j["nodes"][2]["attrs"]["T"], "float32");
  EXPECT_EQ(j["nodes"][2]["attrs"]["transpose_a"], false);
}

TEST_F(CliTest, ExampleGraphRuns) {
  ASSERT_EQ(Run({"run", std::string(TESSERA_SOURCE_DIR) + "/examples/linear.json", "--fetch", "loss",
                 "--feed", R"(x={"dtype": "float32", "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6]})",
                 "--config", std::string(TESSERA_SOURCE_DIR) + "/examples/four_cpus.json"}),
            0)
      << err_.str();
  auto j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j["loss"]["shape"], nlohmann::json::array());
}

// A GraphDef TensorFlow wrote runs as it is, and converts to JSON and text and back with
// the same result from each form.
TEST_F(CliTest, RunsAndConvertsTensorFlowGraphDefs) {
  const std::string pb = std::string(TESSERA_SOURCE_DIR) + "/tests/testdata/tf_matmul_relu.pb";
  const std::string feed = R"(x={"dtype": "float32", "shape": [2, 3], "data": [1, 1, 1, 1, 0, 0]})";
  ASSERT_EQ(Run({"run", pb, "--fetch", "y,z", "--feed", feed}), 0) << err_.str();
  const std::string direct = out_.str();
  auto j = nlohmann::json::parse(direct);
  EXPECT_EQ(j["y"]["data"], nlohmann::json({9.5, 0.0, 1.5, 0.0}));
  EXPECT_THAT(err_.str(), HasSubstr("ignoring attr '_output_shapes'"));

  const std::string json = (dir_ / "g.json").string(), text = (dir_ / "g.pbtxt").string(),
                    binary = (dir_ / "g.pb").string();
  ASSERT_EQ(Run({"convert", pb, json}), 0) << err_.str();
  ASSERT_EQ(Run({"convert", json, text}), 0) << err_.str();
  ASSERT_EQ(Run({"convert", text, binary}), 0) << err_.str();
  for (const std::string& g : {json, text, binary}) {
    ASSERT_EQ(Run({"run", g, "--fetch", "y,z", "--feed", feed}), 0) << g << ": " << err_.str();
    EXPECT_EQ(out_.str(), direct) << g;
  }
  // A file named otherwise is read by what its bytes are.
  fs::copy_file(text, dir_ / "graph.txt");
  ASSERT_EQ(Run({"run", (dir_ / "graph.txt").string(), "--fetch", "z", "--feed", feed}), 0) << err_.str();
}

TEST_F(CliTest, ConvertRefusesWhatItCannotWrite) {
  std::string g = Write("g.json", kGraph);
  EXPECT_EQ(Run({"convert", g, (dir_ / "out.onnx").string()}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("does not end in .json, .pb or .pbtxt"));
  EXPECT_EQ(Run({"convert", g}), 2);
  std::string broken = Write("broken.pbtxt", "node { name: \"a\" op: \"NoOp\"\n input: \"missing\" }");
  EXPECT_EQ(Run({"convert", broken, (dir_ / "out.pb").string()}), 1);
  EXPECT_FALSE(fs::exists(dir_ / "out.pb"));
}

}  // namespace
}  // namespace tessera
