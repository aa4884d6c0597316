#include "runtime/partition.h"

#include <gtest/gtest.h>

#include "graph/builder/ops.h"
#include "kernels/rendezvous.h"

namespace tessera {
namespace {

std::string Cpu(int i) { return StrCat("/job:localhost/replica:0/task:0/device:CPU:", i); }

// Builds the graph and assigns each node the device its scope requested (a full name).
std::unique_ptr<Graph> Placed(const Scope& root) {
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  auto g = Graph::FromSpec(def);
  EXPECT_TRUE(g.ok()) << g.status();
  for (Node* n : (*g)->nodes()) n->set_assigned_device(n->requested_device().empty() ? Cpu(0) : n->requested_device());
  return std::move(*g);
}

std::map<std::string, GraphSpec> Split(const Graph& g) {
  auto parts = Partition(g, {.incarnation = [](const std::string& d) -> uint64_t { return 100 + d.back() - '0'; }});
  EXPECT_TRUE(parts.ok()) << parts.status();
  std::map<std::string, GraphSpec> graphs;
  if (parts.ok()) {
    for (auto& [device, part] : *parts) graphs.emplace(device, part.graph->ToSpec());
  }
  return graphs;
}

std::vector<const NodeSpec*> OfOp(const GraphSpec& def, std::string_view op) {
  std::vector<const NodeSpec*> out;
  for (const NodeSpec& n : def.nodes) {
    if (n.op == op) out.push_back(&n);
  }
  return out;
}

const NodeSpec* Named(const GraphSpec& def, std::string_view name) {
  for (const NodeSpec& n : def.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

std::string StringAttr(const NodeSpec& n, std::string_view name) {
  std::string v;
  EXPECT_TRUE(GetAttr(n.attrs, n.name, name, &v).ok()) << name;
  return v;
}

TEST(PartitionTest, OneDeviceIsOnePartitionWithoutSendsOrRecvs) {
  Scope root = Scope::NewRootScope();
  ops::Neg(root.WithOpName("n"), ops::Const(root.WithOpName("c"), Tensor::Scalar(1.0f)));
  auto parts = Split(*Placed(root));
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts.begin()->first, Cpu(0));
  EXPECT_EQ(parts.begin()->second.nodes.size(), 2u);
  EXPECT_TRUE(OfOp(parts.begin()->second, "_Send").empty());
}

TEST(PartitionTest, ConsumersOnOneDeviceShareOnePair) {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root.WithOpName("a").WithDevice(Cpu(0)), Tensor::Scalar(2.0f));
  ops::Neg(root.WithOpName("b").WithDevice(Cpu(1)), a);
  ops::Square(root.WithOpName("c").WithDevice(Cpu(1)), a);
  ops::Neg(root.WithOpName("d").WithDevice(Cpu(2)), a);
  ops::Neg(root.WithOpName("e").WithDevice(Cpu(0)), a);
  auto parts = Split(*Placed(root));
  ASSERT_EQ(parts.size(), 3u);
  // CPU:0 sends a:0 once to each other device.
  auto sends = OfOp(parts[Cpu(0)], "_Send");
  ASSERT_EQ(sends.size(), 2u);
  std::set<std::string> to;
  for (const NodeSpec* s : sends) {
    EXPECT_EQ(s->inputs, std::vector<std::string>{"a"});  // output 0 of a
    EXPECT_EQ(StringAttr(*s, "tensor_name"), "a:0");
    EXPECT_EQ(StringAttr(*s, "send_device"), Cpu(0));
    to.insert(StringAttr(*s, "recv_device"));
  }
  EXPECT_EQ(to, (std::set<std::string>{Cpu(1), Cpu(2)}));
  auto recvs = OfOp(parts[Cpu(1)], "_Recv");
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(Named(parts[Cpu(1)], "b")->inputs, std::vector<std::string>{recvs[0]->name});
  EXPECT_EQ(Named(parts[Cpu(1)], "c")->inputs, std::vector<std::string>{recvs[0]->name});
  EXPECT_EQ(Named(parts[Cpu(0)], "e")->inputs, std::vector<std::string>{"a"});
  EXPECT_EQ(OfOp(parts[Cpu(2)], "_Recv").size(), 1u);
  int64_t incarnation = 0;
  ASSERT_TRUE(GetAttr(recvs[0]->attrs, "", "send_device_incarnation", &incarnation).ok());
  EXPECT_EQ(incarnation, 100);
  TensorShape shape;
  ASSERT_TRUE(GetAttr(recvs[0]->attrs, "", "shape", &shape).ok());
  EXPECT_EQ(shape, TensorShape({}));
}

TEST(PartitionTest, EachOutputOfANodeGetsItsOwnPair) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x").WithDevice(Cpu(0)), Tensor::FromVector<float>({1, 2}));
  auto r = ops::AllReduce(root.WithOpName("r").WithDevice(Cpu(0)), {x, x}, {});
  ops::AddN(root.WithOpName("sum").WithDevice(Cpu(1)), {r[0], r[1]});
  auto parts = Split(*Placed(root));
  auto recvs = OfOp(parts[Cpu(1)], "_Recv");
  ASSERT_EQ(recvs.size(), 2u);
  std::set<std::string> names;
  for (const NodeSpec* n : recvs) names.insert(StringAttr(*n, "tensor_name"));
  EXPECT_EQ(names, (std::set<std::string>{"r:0", "r:1"}));
}

TEST(PartitionTest, ControlEdgeBecomesAnEmptyTensorPair) {
  Scope root = Scope::NewRootScope();
  auto first = ops::NoOp(root.WithOpName("first").WithDevice(Cpu(0)));
  auto then = root.WithDevice(Cpu(1)).WithControlDependencies({first});
  ops::Const(then.WithOpName("then_a"), Tensor::Scalar(1.0f));
  ops::Const(then.WithOpName("then_b"), Tensor::Scalar(2.0f));
  auto parts = Split(*Placed(root));
  const GraphSpec& p0 = parts[Cpu(0)];
  auto sends = OfOp(p0, "_Send");
  ASSERT_EQ(sends.size(), 1u);  // one pair for both dependents
  const NodeSpec* trigger = Named(p0, sends[0]->inputs[0].substr(0, sends[0]->inputs[0].find(':')));
  ASSERT_NE(trigger, nullptr);
  EXPECT_EQ(trigger->op, "Const");
  EXPECT_EQ(trigger->inputs, std::vector<std::string>{"^first"});
  EXPECT_EQ(StringAttr(*sends[0], "tensor_name"), "^first");
  auto recvs = OfOp(parts[Cpu(1)], "_Recv");
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(Named(parts[Cpu(1)], "then_a")->inputs, std::vector<std::string>{"^" + recvs[0]->name});
  EXPECT_EQ(Named(parts[Cpu(1)], "then_b")->inputs, std::vector<std::string>{"^" + recvs[0]->name});
  // Every partition is a valid graph on its own.
  for (const auto& [device, def] : parts) EXPECT_TRUE(Graph::FromSpec(def).ok()) << device;
}

TEST(PartitionTest, ReadingAVariableOnAnotherDeviceSendsItsValue) {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v").WithDevice(Cpu(0)), TensorShape({2}), DataType::kFloat);
  ops::Neg(root.WithOpName("n").WithDevice(Cpu(1)), v);
  auto parts = Split(*Placed(root));
  auto sends = OfOp(parts[Cpu(0)], "_Send");
  ASSERT_EQ(sends.size(), 1u);
  DataType t = DataType::kInvalid;
  ASSERT_TRUE(GetAttr(sends[0]->attrs, "", "T", &t).ok());
  EXPECT_EQ(t, DataType::kFloat);
  auto g = Graph::FromSpec(parts[Cpu(0)]);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_FALSE((*g)->FindNode(sends[0]->name)->input_is_ref(0));
}

TEST(PartitionTest, UnplacedNodeIsAnError) {
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("c"), Tensor::Scalar(1.0f));
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  auto g = Graph::FromSpec(def);
  auto parts = Partition(**g, {.incarnation = [](const std::string&) -> uint64_t { return 1; }});
  EXPECT_EQ(parts.status().code(), Code::kInvalidArgument);
  EXPECT_NE(parts.status().message().find("'c' (Const)"), std::string::npos) << parts.status();
}

TEST(PartitionTest, AllReduceMembersGetRingPlacesInDeviceOrder) {
  Scope root = Scope::NewRootScope();
  for (int d : {2, 0, 1}) {
    auto x = ops::Const(root.WithOpName(StrCat("x", d)).WithDevice(Cpu(d)), Tensor::Scalar(1.0f));
    ops::AllReduce(root.WithOpName(StrCat("r", d)).WithDevice(Cpu(d)), {x}, {.group_size = 3});
  }
  auto parts = Split(*Placed(root));
  for (int d = 0; d < 3; ++d) {
    const NodeSpec* r = Named(parts[Cpu(d)], StrCat("r", d));
    ASSERT_NE(r, nullptr);
    int64_t rank = -1, inc = 0, prev_inc = 0;
    ASSERT_TRUE(GetAttr(r->attrs, "", "_ring_rank", &rank).ok());
    ASSERT_TRUE(GetAttr(r->attrs, "", "_ring_incarnation", &inc).ok());
    ASSERT_TRUE(GetAttr(r->attrs, "", "_ring_prev_incarnation", &prev_inc).ok());
    EXPECT_EQ(rank, d);
    EXPECT_EQ(StringAttr(*r, "_ring_next"), Cpu((d + 1) % 3));
    EXPECT_EQ(StringAttr(*r, "_ring_prev"), Cpu((d + 2) % 3));
    EXPECT_EQ(inc, 100 + d);
    EXPECT_EQ(prev_inc, 100 + (d + 2) % 3);
  }
}

// Each CPU member learns every member, its incarnation and its host (which Gloo binds to
// when asked for), and the session's timeout.
TEST(PartitionTest, AllReduceMembersLearnTheirHosts) {
  const auto member_attrs = [](const std::map<int, std::string>& host_of_task, const std::string& hint) {
    Scope root = Scope::NewRootScope();
    for (int t = 0; t < 2; ++t) {
      const std::string device = StrCat("/job:worker/replica:0/task:", t, "/device:CPU:0");
      auto x = ops::Const(root.WithOpName(StrCat("x", t)).WithDevice(device), Tensor::Scalar(1.0f));
      ops::AllReduce(root.WithOpName(StrCat("r", t)).WithDevice(device), {x},
                     {.group_size = 2, .communication_hint = hint});
    }
    auto parts = Partition(*Placed(root), {.incarnation = [](const std::string& d) -> uint64_t { return 7; },
                                           .host = [&](const std::string& d) {
                                             return host_of_task.at(d.find("task:1") != std::string::npos);
                                           },
                                           .collective_timeout = std::chrono::milliseconds(5000)});
    std::vector<NodeSpec> members;
    if (!parts.ok()) return std::make_pair(parts.status(), members);
    for (int t = 0; t < 2; ++t) {
      const std::string device = StrCat("/job:worker/replica:0/task:", t, "/device:CPU:0");
      members.push_back(*Named(parts->at(device).graph->ToSpec(), StrCat("r", t)));
    }
    return std::make_pair(Status::OK(), members);
  };
  auto [apart, members] = member_attrs({{0, "198.18.0.1"}, {1, "198.18.0.2"}}, "auto");
  ASSERT_TRUE(apart.ok()) << apart;
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(StringAttr(members[t], "_ring_hosts"), "198.18.0.1,198.18.0.2");
    EXPECT_EQ(StringAttr(members[t], "_ring_members"),
              "/job:worker/replica:0/task:0/device:CPU:0,/job:worker/replica:0/task:1/device:CPU:0");
    EXPECT_EQ(StringAttr(members[t], "_ring_member_incarnations"), "7,7");
  }
  int64_t timeout_ms = 0;
  ASSERT_TRUE(GetAttr(members[0].attrs, "", "_ring_timeout_ms", &timeout_ms).ok());
  EXPECT_EQ(timeout_ms, 5000);

  auto [together, same] = member_attrs({{0, "localhost"}, {1, "127.0.0.1"}}, "gloo");
  ASSERT_TRUE(together.ok()) << together;
  EXPECT_EQ(StringAttr(same[1], "_ring_hosts"), "localhost,127.0.0.1");

  auto [unknown, none] = member_attrs({{0, "a"}, {1, "b"}}, "carrier-pigeon");
  EXPECT_EQ(unknown.code(), Code::kInvalidArgument);
  EXPECT_NE(unknown.message().find("communication_hint 'carrier-pigeon'"), std::string::npos) << unknown;
}

TEST(PartitionTest, IncompleteOrCrowdedAllReduceGroupsAreErrors) {
  {
    Scope root = Scope::NewRootScope();
    auto x = ops::Const(root.WithOpName("x").WithDevice(Cpu(0)), Tensor::Scalar(1.0f));
    ops::AllReduce(root.WithOpName("lonely").WithDevice(Cpu(0)), {x}, {.group_size = 2});
    auto parts = Partition(*Placed(root), {.incarnation = [](const std::string&) -> uint64_t { return 1; }});
    EXPECT_EQ(parts.status().code(), Code::kInvalidArgument);
    EXPECT_NE(parts.status().message().find("'lonely'"), std::string::npos) << parts.status();
    EXPECT_NE(parts.status().message().find("group_size 2"), std::string::npos) << parts.status();
  }
  {
    Scope root = Scope::NewRootScope();
    auto x = ops::Const(root.WithOpName("x").WithDevice(Cpu(0)), Tensor::Scalar(1.0f));
    ops::AllReduce(root.WithOpName("a").WithDevice(Cpu(0)), {x}, {.group_size = 2});
    ops::AllReduce(root.WithOpName("b").WithDevice(Cpu(0)), {x}, {.group_size = 2});
    auto parts = Partition(*Placed(root), {.incarnation = [](const std::string&) -> uint64_t { return 1; }});
    EXPECT_EQ(parts.status().code(), Code::kInvalidArgument);
    EXPECT_NE(parts.status().message().find("two members"), std::string::npos) << parts.status();
  }
  {
    Scope root = Scope::NewRootScope();
    auto x = ops::Const(root.WithOpName("x").WithDevice(Cpu(0)), Tensor::Scalar(1.0f));
    auto y = ops::Const(root.WithOpName("y").WithDevice(Cpu(1)), Tensor::Scalar(1.0f));
    ops::AllReduce(root.WithOpName("a").WithDevice(Cpu(0)), {x}, {.group_size = 2});
    ops::AllReduce(root.WithOpName("b").WithDevice(Cpu(1)), {y}, {.reduction = "max", .group_size = 2});
    auto parts = Partition(*Placed(root), {.incarnation = [](const std::string&) -> uint64_t { return 1; }});
    EXPECT_EQ(parts.status().code(), Code::kInvalidArgument);
    EXPECT_NE(parts.status().message().find("'reduction'"), std::string::npos) << parts.status();
  }
}

TEST(PartitionTest, AllReduceGroupsStayOnOneDeviceTypeAndGpusInOneTask) {
  const auto status_of = [](const std::string& a, const std::string& b) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Const(root.WithOpName("x").WithDevice(a), Tensor::Scalar(1.0f));
    auto y = ops::Const(root.WithOpName("y").WithDevice(b), Tensor::Scalar(1.0f));
    ops::AllReduce(root.WithOpName("a").WithDevice(a), {x}, {.group_size = 2});
    ops::AllReduce(root.WithOpName("b").WithDevice(b), {y}, {.group_size = 2});
    return Partition(*Placed(root), {.incarnation = [](const std::string&) -> uint64_t { return 1; }}).status();
  };
  const std::string gpu0 = "/job:localhost/replica:0/task:0/device:GPU:0";
  Status mixed = status_of(Cpu(0), gpu0);
  EXPECT_EQ(mixed.code(), Code::kInvalidArgument);
  EXPECT_NE(mixed.message().find("members on CPU and GPU devices"), std::string::npos) << mixed;
  EXPECT_NE(mixed.message().find("'a'"), std::string::npos) << mixed;
  Status tasks = status_of("/job:worker/replica:0/task:0/device:GPU:0", "/job:worker/replica:0/task:1/device:GPU:0");
  EXPECT_EQ(tasks.code(), Code::kInvalidArgument);
  EXPECT_NE(tasks.message().find("GPUs of different tasks"), std::string::npos) << tasks;
  EXPECT_TRUE(status_of(gpu0, "/job:localhost/replica:0/task:0/device:GPU:1").ok());
  EXPECT_TRUE(status_of("/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0").ok());
}

TEST(PartitionTest, EachPartitionKnowsItsTask) {
  const std::string ps = "/job:ps/replica:0/task:0/device:CPU:0";
  const std::string worker = "/job:worker/replica:0/task:1/device:CPU:0";
  Scope root = Scope::NewRootScope();
  auto w = ops::Const(root.WithOpName("w").WithDevice(ps), Tensor::Scalar(2.0f));
  ops::Neg(root.WithOpName("n").WithDevice(worker), w);
  auto parts = Partition(*Placed(root), {.incarnation = [](const std::string&) -> uint64_t { return 1; }});
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ(parts->at(ps).task, "/job:ps/replica:0/task:0");
  EXPECT_EQ(parts->at(worker).task, "/job:worker/replica:0/task:1");
  EXPECT_EQ(OfOp(parts->at(ps).graph->ToSpec(), "_Send").size(), 1u);
}

}  // namespace
}  // namespace tessera
