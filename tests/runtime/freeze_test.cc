// FreezeGraph: only what the outputs need, variables turned into constants of their
// values, the same results without initialisation, and the errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/serialize/graph_json.h"
#include "tests/test_util.h"
#include "runtime/freeze.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

struct Model {
  GraphSpec def;
  std::unique_ptr<Session> session;
};

Model Trained() {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 2}));
  auto w = ops::Variable(root.WithOpName("w"), TensorShape({2, 1}), DataType::kFloat);
  ops::Assign(root.WithOpName("init"), w, Tensor::FromVector<float>({3, -1}, TensorShape({2, 1})));
  auto step = ops::AssignAdd(root.WithOpName("step"), w, Tensor::FromVector<float>({1, 1}, TensorShape({2, 1})));
  ops::Relu(root.WithOpName("y"), ops::MatMul(root, x, w));
  ops::Identity(root.WithOpName("after_step"), step);
  ops::Variable(root.WithOpName("unused"), TensorShape({5}), DataType::kFloat);
  Model m;
  EXPECT_TRUE(root.ToSpec(&m.def).ok());
  m.session = testing::MakeSession(root);
  std::vector<Tensor> out;
  EXPECT_TRUE(m.session->Run({}, {}, {"init", "step"}, &out).ok());  // w = [4, 0]
  return m;
}

TEST(FreezeTest, VariablesBecomeConstantsOfTheirValues) {
  Model m = Trained();
  StatusOr<GraphSpec> frozen = FreezeGraph(*m.session, {"y"});
  ASSERT_TRUE(frozen.ok()) << frozen.status();
  std::vector<std::string> ops;
  for (const NodeSpec& n : frozen->nodes) {
    ops.push_back(n.op);
    EXPECT_NE(n.name, "init");
    EXPECT_NE(n.name, "unused");
  }
  EXPECT_THAT(ops, ::testing::UnorderedElementsAre("Placeholder", "Const", "MatMul", "Relu"));
  // Through JSON and into a new session, with no initialisation.
  StatusOr<GraphSpec> loaded = GraphSpecFromJson(GraphSpecToJson(*frozen));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto session = Session::Create({}, *loaded);
  ASSERT_TRUE(session.ok()) << session.status();
  Tensor y = testing::Fetch(**session, "y", {{"x", Tensor::FromVector<float>({1, 2, -1, 5}, TensorShape({2, 2}))}});
  EXPECT_EQ(testing::Values<float>(y), (std::vector<float>{4, 0}));
}

TEST(FreezeTest, ErrorsNameTheProblem) {
  Model m = Trained();
  Status st = FreezeGraph(*m.session, {"after_step"}).status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("'step' (AssignAdd), which updates a variable"));
  EXPECT_EQ(FreezeGraph(*m.session, {"nope:0"}).status().code(), Code::kNotFound);
  st = FreezeGraph(*m.session, {"unused"}).status();
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("unused"));
}

}  // namespace
}  // namespace tessera
