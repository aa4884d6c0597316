// TF1's meta graph (PREFIX.meta): what a Saver writes reads back, and damaged bytes are a
// Status naming the file and where.
#include "graph/serialize/meta_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/builder/ops.h"
#include "graph/serialize/tensorflow_graph.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

std::string SmallGraphDef(const std::string& device) {
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("c").WithDevice(device), Tensor::Scalar(1.0f));
  GraphSpec spec;
  EXPECT_TRUE(root.ToSpec(&spec).ok());
  return *GraphSpecToTensorFlow(spec, TensorFlowFormat::kBinary);
}

TEST(MetaGraphTest, WhatIsWrittenReadsBack) {
  MetaGraph meta;
  meta.graph_def = SmallGraphDef("/cpu:1");
  meta.saver = SaverNames{"save/Const:0", "save/control_dependency:0", "save/restore_all", 3};
  meta.variables = {{"w:0", "w/Assign", "w/read:0", "w/initial_value:0", true},
                    {"step:0", "step/Assign", "step/read:0", "", false}};
  StatusOr<std::string> bytes = SerializeMetaGraph(meta);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  StatusOr<MetaGraph> back = ParseMetaGraph(*bytes, "m.meta");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->graph_def, meta.graph_def);
  ASSERT_TRUE(back->saver.has_value());
  EXPECT_EQ(back->saver->restore_op_name, "save/restore_all");
  EXPECT_EQ(back->saver->max_to_keep, 3);
  ASSERT_EQ(back->variables.size(), 2u);
  EXPECT_EQ(back->variables[0].snapshot_name, "w/read:0");
  EXPECT_TRUE(back->variables[0].trainable);
  EXPECT_FALSE(back->variables[1].trainable);
  // clear_devices: the same graph without its device requests.
  back = ParseMetaGraph(*bytes, "m.meta", true);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->graph_def, SmallGraphDef(""));
}

TEST(MetaGraphTest, DamagedBytesNameTheFileAndWhere) {
  MetaGraph meta;
  meta.graph_def = SmallGraphDef("");
  const std::string bytes = *SerializeMetaGraph(meta);
  StatusOr<MetaGraph> cut = ParseMetaGraph(bytes.substr(0, bytes.size() - 4), "cut.meta");
  EXPECT_EQ(cut.status().code(), Code::kDataLoss);
  EXPECT_THAT(cut.status().message(), HasSubstr("meta graph 'cut.meta': field 2 at byte offset"));
  EXPECT_EQ(ParseMetaGraph("\xff\xff\xff", "junk.meta").status().code(), Code::kDataLoss);
  MetaGraph junk;
  junk.graph_def = "\xff";
  EXPECT_THAT(SerializeMetaGraph(junk).status().message(), HasSubstr("must be a serialized GraphDef"));
  // Nothing at all is an empty meta graph, as protobuf reads it.
  StatusOr<MetaGraph> empty = ParseMetaGraph("", "empty.meta");
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->saver.has_value());
}

}  // namespace
}  // namespace tessera
