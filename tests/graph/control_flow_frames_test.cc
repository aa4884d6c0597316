// The frame walk the partitioner and the executor share, on a hand-built while loop and on
// the malformed loops it must refuse.
#include "graph/control_flow_frames.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera {
namespace {

using ::testing::HasSubstr;

NodeSpec Node(std::string name, std::string op, std::vector<std::string> inputs, AttrMap attrs = {}) {
  NodeSpec n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  if (n.op != "Const" && n.op != "LoopCond") n.attrs.emplace("T", DataType::kFloat);
  return n;
}

NodeSpec Const(std::string name) { return Node(std::move(name), "Const", {}, {{"dtype", DataType::kFloat}, {"value", Tensor::Scalar(1.0f)}}); }

NodeSpec Enter(std::string name, std::string input, std::string frame) {
  return Node(std::move(name), "Enter", {std::move(input)},
              {{"frame_name", std::move(frame)}, {"is_constant", false}, {"parallel_iterations", int64_t{10}}});
}

// x -> Enter -> Merge <- NextIteration <- body; Merge < limit -> LoopCond -> Switch -> Exit -> after.
std::vector<NodeSpec> WhileLoop() {
  return {Const("x"),
          Const("limit"),
          Enter("enter", "x", "loop"),
          Enter("limit_enter", "limit", "loop"),
          Node("merge", "Merge", {"enter", "next"}, {{"N", int64_t{2}}}),
          Node("less", "Less", {"merge", "limit_enter"}),
          Node("cond", "LoopCond", {"less"}),
          Node("switch", "Switch", {"merge", "cond"}),
          Node("body", "Identity", {"switch:1"}),
          Node("next", "NextIteration", {"body"}),
          Node("exit", "Exit", {"switch:0"}),
          Node("after", "Identity", {"exit"})};
}

StatusOr<ControlFlowFrames> Frames(std::vector<NodeSpec> nodes, std::unique_ptr<Graph>* graph) {
  StatusOr<std::unique_ptr<Graph>> g = Graph::FromSpec(GraphSpec{std::move(nodes)});
  if (!g.ok()) return g.status();
  *graph = std::move(*g);
  return FindControlFlowFrames(**graph);
}

TEST(ControlFlowFramesTest, AWhileLoopsNodesAreInItsFrameAndItsExitLeavesIt) {
  std::unique_ptr<Graph> g;
  StatusOr<ControlFlowFrames> f = Frames(WhileLoop(), &g);
  ASSERT_TRUE(f.ok()) << f.status();
  auto in = [&](const char* name) { return f->input_frame[g->FindNode(name)->id()]; };
  auto out = [&](const char* name) { return f->output_frame[g->FindNode(name)->id()]; };
  EXPECT_EQ(in("x"), "");
  EXPECT_EQ(in("enter"), "");
  EXPECT_EQ(out("enter"), "loop");
  for (const char* name : {"merge", "less", "cond", "switch", "body", "next", "exit"}) EXPECT_EQ(in(name), "loop") << name;
  EXPECT_EQ(out("exit"), "");
  EXPECT_EQ(in("after"), "");
  EXPECT_EQ(f->parent.at("loop"), "");
  EXPECT_EQ(f->order.size(), g->nodes().size());
}

TEST(ControlFlowFramesTest, MalformedLoopsAreInvalidArgumentsNamingTheNode) {
  std::unique_ptr<Graph> g;
  std::vector<NodeSpec> stray_exit = WhileLoop();
  stray_exit.push_back(Node("stray", "Exit", {"x"}));
  Status s = Frames(stray_exit, &g).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'stray' (Exit) is an Exit outside every loop"));

  std::vector<NodeSpec> two_frames = WhileLoop();
  two_frames.push_back(Node("mixed", "Add", {"x", "body"}));
  s = Frames(two_frames, &g).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'mixed' (Add) has inputs from frame"));

  std::vector<NodeSpec> reentered = WhileLoop();
  reentered.push_back(Enter("again", "body", "loop"));
  s = Frames(reentered, &g).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("enters frame 'loop' from frame 'loop', which other Enters enter from ''"));
}

}  // namespace
}  // namespace tessera
