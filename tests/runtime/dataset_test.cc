// tf.data through sessions: every dataset transformation, one-shot and initializable
// iterators, functions, files, errors that leave the iterator usable, and sharing on a
// local server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "graph/builder/dataset_ops.h"
#include "graph/builder/ops.h"
#include "graph/serialize/graph_json.h"
#include "kernels/data/iterator_resource.h"
#include "runtime/server.h"
#include "runtime/session.h"
#include "tests/test_ops.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::Values;

constexpr DataType kI64 = DataType::kInt64;

Output Record(const Scope& s, const std::string& tag, int sleep_ms = 0, std::vector<Operation> deps = {}) {
  NodeSpec def;
  def.op = "TestRecord";
  def.attrs = {{"tag", tag}, {"sleep_ms", sleep_ms}};
  Scope scoped = deps.empty() ? s : s.WithControlDependencies(deps);
  return Output(scoped.AddNode(std::move(def)));
}

Output Times(const Scope& s, Output x, int64_t k) { return ops::Mul(s, x, Tensor::Scalar<int64_t>(k)); }

// A graph with an iterator over a dataset; `next` is the first component, fetched
// through an Identity so a test can name it.
struct Pipeline {
  Scope root = Scope::NewRootScope();
  ops::Iterator it;
  std::vector<Output> next;

  void Finish(const ops::Dataset& ds, bool one_shot = false) {
    it = one_shot ? ops::OneShotIterator(root.WithOpName("it"), ds) : ops::InitializableIterator(root.WithOpName("it"), ds);
    next = ops::GetNext(root.WithOpName("next"), it);
    ASSERT_TRUE(root.ok()) << root.status();
  }
  std::unique_ptr<Session> Open(SessionConfig config = {}) const {
    auto s = testing::MakeSession(root, config);
    if (s != nullptr && it.initializer.node() != nullptr) {
      Status st = s->Run({}, {}, {it.initializer.name()}, nullptr);
      EXPECT_TRUE(st.ok()) << st;
    }
    return s;
  }
};

// Every element left, as the tensors of component `c`.
std::vector<Tensor> Drain(Session& s, const Pipeline& p, int c = 0, Status* end = nullptr) {
  std::vector<Tensor> out;
  while (true) {
    std::vector<Tensor> got;
    Status st = s.Run({}, {p.next[c].name()}, {}, &got);
    if (!st.ok()) {
      if (end != nullptr) *end = st;
      EXPECT_EQ(st.code(), Code::kOutOfRange) << st;
      return out;
    }
    out.push_back(got[0]);
    if (out.size() > 100000) return out;
  }
}

std::vector<int64_t> Scalars(const std::vector<Tensor>& ts) {
  std::vector<int64_t> v;
  for (const Tensor& t : ts) v.push_back(t.data<int64_t>()[0]);
  return v;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::RegisterTestOps(); }
};

TEST_F(DatasetTest, RangeRepeatBatchGivesBatchesOfSevenThenTwo) {
  Pipeline p;
  auto ds = ops::Batch(p.root, ops::Repeat(p.root, ops::RangeDataset(p.root, 0, 10), 3), 7);
  p.Finish(ds);
  EXPECT_EQ(p.next[0].node->output_shape(0).DebugString(), "[?]");
  auto s = p.Open();
  Status end;
  std::vector<Tensor> batches = Drain(*s, p, 0, &end);
  std::vector<int64_t> sizes, all;
  for (const Tensor& b : batches) {
    sizes.push_back(b.dim(0));
    for (int64_t v : Values<int64_t>(b)) all.push_back(v);
  }
  EXPECT_THAT(sizes, ElementsAre(7, 7, 7, 7, 2));
  std::vector<int64_t> want;
  for (int r = 0; r < 3; ++r)
    for (int64_t v : Iota(10)) want.push_back(v);
  EXPECT_EQ(all, want);
  EXPECT_THAT(end.message(), HasSubstr("End of sequence"));
  // The end is sticky until the initializer runs again, which starts over.
  std::vector<Tensor> out;
  EXPECT_EQ(s->Run({}, {p.next[0].name()}, {}, &out).code(), Code::kOutOfRange);
  ASSERT_TRUE(s->Run({}, {}, {p.it.initializer.name()}, nullptr).ok());
  EXPECT_EQ(Drain(*s, p).size(), 5u);
}

TEST_F(DatasetTest, DropRemainderGivesFourFullBatchesOfStaticShape) {
  Pipeline p;
  p.Finish(ops::Batch(p.root, ops::Repeat(p.root, ops::RangeDataset(p.root, 0, 10), 3), 7, {.drop_remainder = true}));
  EXPECT_EQ(p.next[0].node->output_shape(0).DebugString(), "[7]");
  auto s = p.Open();
  std::vector<Tensor> batches = Drain(*s, p);
  ASSERT_EQ(batches.size(), 4u);
  for (const Tensor& b : batches) EXPECT_EQ(b.dim(0), 7);
}

TEST_F(DatasetTest, GetNextGivesOneElementPerRunHoweverManyFetchesNameIt) {
  Pipeline p;
  p.Finish(ops::RangeDataset(p.root, 0, 5));
  ops::Identity(p.root.WithOpName("a"), p.next[0]);
  ops::Identity(p.root.WithOpName("b"), p.next[0]);
  auto s = p.Open();
  for (int64_t i = 0; i < 5; ++i) {
    std::vector<Tensor> out;
    ASSERT_TRUE(s->Run({}, {"a", "b", p.next[0].name(), p.next[0].name()}, {}, &out).ok());
    for (const Tensor& t : out) EXPECT_EQ(t.data<int64_t>()[0], i);
  }
}

TEST_F(DatasetTest, UninitializedIteratorIsFailedPreconditionAndStaysUsable) {
  Pipeline p;
  p.Finish(ops::RangeDataset(p.root, 0, 3));
  auto s = testing::MakeSession(p.root);
  std::vector<Tensor> out;
  Status st = s->Run({}, {p.next[0].name()}, {}, &out);
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("has not been initialized"));
  ASSERT_TRUE(s->Run({}, {}, {p.it.initializer.name()}, nullptr).ok());
  EXPECT_EQ(Scalars(Drain(*s, p)), Iota(3));
}

TEST_F(DatasetTest, RangeWithNegativeStepAndZeroStep) {
  Pipeline p;
  p.Finish(ops::RangeDataset(p.root, 5, -1, -2));
  auto s = p.Open();
  EXPECT_THAT(Scalars(Drain(*s, p)), ElementsAre(5, 3, 1));

  Pipeline bad;
  bad.Finish(ops::RangeDataset(bad.root, 0, 5, 0));
  auto s2 = testing::MakeSession(bad.root);
  Status st = s2->Run({}, {}, {bad.it.initializer.name()}, nullptr);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("step must be a non-zero integer"));
  EXPECT_THAT(st.message(), HasSubstr("RangeDataset"));
}

TEST_F(DatasetTest, FromTensorSlicesFromTensorsZipSkipTake) {
  Pipeline p;
  Tensor xs = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Tensor ys = Tensor::FromVector<int64_t>({10, 20, 30});
  auto slices = ops::TensorSliceDataset(p.root, {xs, ys});
  ASSERT_EQ(slices.shapes.size(), 2u);
  EXPECT_EQ(slices.shapes[0].DebugString(), "[2]");
  auto zipped = ops::Zip(p.root, {slices, ops::RangeDataset(p.root, 100, 200)});
  p.Finish(ops::Take(p.root, ops::Skip(p.root, zipped, 1), 5));
  ASSERT_EQ(p.next.size(), 3u);
  auto s = p.Open();
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {p.next[0].name(), p.next[1].name(), p.next[2].name()}, {}, &out).ok());
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(3, 4));
  EXPECT_EQ(out[1].data<int64_t>()[0], 20);
  EXPECT_EQ(out[2].data<int64_t>()[0], 101);
  ASSERT_TRUE(s->Run({}, {p.next[0].name()}, {}, &out).ok());
  // The slices run out first, so the zip ends after two elements despite take(5).
  EXPECT_EQ(s->Run({}, {p.next[0].name()}, {}, &out).code(), Code::kOutOfRange);

  Pipeline one;
  one.Finish(ops::Repeat(one.root, ops::TensorDataset(one.root, {xs}), 2));
  auto s1 = one.Open();
  std::vector<Tensor> both = Drain(*s1, one);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_TRUE(both[1].Equals(xs));
}

TEST_F(DatasetTest, SlicesOfDifferentLengthsAreAnError) {
  Pipeline p;
  p.Finish(ops::TensorSliceDataset(p.root, {Tensor::FromVector<float>({1, 2}), Tensor::FromVector<float>({1, 2, 3})}));
  auto s = testing::MakeSession(p.root);
  Status st = s->Run({}, {}, {p.it.initializer.name()}, nullptr);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("same size in dimension 0"));
}

std::vector<int64_t> ShuffledRange(int64_t seed, bool reshuffle, int epochs) {
  Pipeline p;
  p.Finish(ops::Repeat(p.root,
                       ops::Shuffle(p.root, ops::RangeDataset(p.root, 0, 50), 20,
                                    {.seed = seed, .reshuffle_each_iteration = reshuffle}),
                       epochs));
  auto s = p.Open();
  return Scalars(Drain(*s, p));
}

TEST_F(DatasetTest, SeededShuffleIsADeterministicPermutation) {
  std::vector<int64_t> a = ShuffledRange(7, true, 2), b = ShuffledRange(7, true, 2);
  ASSERT_EQ(a.size(), 100u);
  EXPECT_EQ(a, b);
  std::vector<int64_t> epoch1(a.begin(), a.begin() + 50), epoch2(a.begin() + 50, a.end());
  EXPECT_NE(epoch1, Iota(50));
  EXPECT_NE(epoch1, epoch2) << "reshuffle_each_iteration draws a new order per epoch";
  std::sort(epoch1.begin(), epoch1.end());
  std::sort(epoch2.begin(), epoch2.end());
  EXPECT_EQ(epoch1, Iota(50));
  EXPECT_EQ(epoch2, Iota(50));
  EXPECT_NE(ShuffledRange(8, true, 1), std::vector<int64_t>(a.begin(), a.begin() + 50));

  std::vector<int64_t> same = ShuffledRange(7, false, 2);
  EXPECT_EQ(std::vector<int64_t>(same.begin(), same.begin() + 50), std::vector<int64_t>(same.begin() + 50, same.end()));
}

// Shuffle hands each batch's spent element storage back for refills: every element still
// comes once, in the order of the same shuffle unbatched, and a short last batch holds only
// its own elements.
TEST_F(DatasetTest, ShuffledBatchesHoldEachElementOnceInTheShuffledOrder) {
  Pipeline p;
  p.Finish(ops::Batch(p.root, ops::Shuffle(p.root, ops::RangeDataset(p.root, 0, 50), 20, {.seed = 7}), 8));
  auto s = p.Open();
  std::vector<int64_t> sizes, all;
  for (const Tensor& b : Drain(*s, p)) {
    sizes.push_back(b.dim(0));
    for (int64_t v : Values<int64_t>(b)) all.push_back(v);
  }
  EXPECT_THAT(sizes, ElementsAre(8, 8, 8, 8, 8, 8, 2));
  Pipeline unbatched;
  unbatched.Finish(ops::Shuffle(unbatched.root, ops::RangeDataset(unbatched.root, 0, 50), 20, {.seed = 7}));
  auto u = unbatched.Open();
  EXPECT_EQ(all, Scalars(Drain(*u, unbatched)));
}

TEST_F(DatasetTest, ShuffleBufferOfOneKeepsOrder) {
  Pipeline p;
  p.Finish(ops::Shuffle(p.root, ops::RangeDataset(p.root, 0, 10), 1, {.seed = 3}));
  auto s = p.Open();
  EXPECT_EQ(Scalars(Drain(*s, p)), Iota(10));
}

TEST_F(DatasetTest, MapRunsTheFunctionPerElement) {
  Pipeline p;
  auto ds = ops::Map(p.root, ops::RangeDataset(p.root, 0, 5), [](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{Times(s, x[0], 3), ops::Cast(s, x[0], DataType::kFloat)};
  });
  ASSERT_EQ(ds.dtypes, (std::vector<DataType>{kI64, DataType::kFloat}));
  p.Finish(ds);
  auto s = p.Open();
  EXPECT_THAT(Scalars(Drain(*s, p)), ElementsAre(0, 3, 6, 9, 12));
}

TEST_F(DatasetTest, ParallelMapRunsCallsAtOnceAndKeepsOrder) {
  testing::ResetMeet();
  Pipeline p;
  auto ds = ops::Map(
      p.root, ops::RangeDataset(p.root, 0, 40),
      [](const Scope& s, const std::vector<Output>& x) {
        NodeSpec meet;
        meet.op = "TestMeet";
        meet.attrs = {{"expected", 2}};
        Node* n = s.WithOpName("meet").AddNode(std::move(meet));
        // Each call waits (up to 2 s) for another to run beside it.
        auto y = ops::Identity(s.WithControlDependencies({Operation(n)}), x[0]);
        return std::vector<Output>{y};
      },
      4);
  p.Finish(ds);
  SessionConfig config;
  config.intra_op_parallelism_threads = 4;
  auto s = p.Open(config);
  EXPECT_EQ(Scalars(Drain(*s, p)), Iota(40));
  EXPECT_GE(testing::MaxMeetConcurrency(), 2) << "calls of the map function ran one at a time";
}

// As tf.data's default max_intra_op_parallelism of 1: a map function's kernels keep their
// work on the calling thread rather than take the intra-op pool's threads from the step.
TEST_F(DatasetTest, MapFunctionKernelsDoNotSplitAcrossTheIntraOpPool) {
  testing::ClearIntraThreadsSeen();
  Pipeline p;
  auto ds = ops::Map(p.root, ops::RangeDataset(p.root, 0, 2), [](const Scope& s, const std::vector<Output>& x) {
    NodeSpec intra;
    intra.op = "TestIntraThreads";
    intra.attrs = {{"n", int64_t{8}}};
    Node* n = s.WithOpName("intra").AddNode(std::move(intra));
    return std::vector<Output>{ops::Identity(s.WithControlDependencies({Operation(n)}), x[0])};
  });
  p.Finish(ds);
  SessionConfig config;
  config.intra_op_parallelism_threads = 4;
  auto s = p.Open(config);
  EXPECT_EQ(Scalars(Drain(*s, p)), Iota(2));
  EXPECT_EQ(testing::IntraThreadsSeen().size(), 1u);
}

TEST_F(DatasetTest, MapErrorIsReportedAndTheIteratorGoesOn) {
  Pipeline p;
  auto ds = ops::Map(p.root, ops::RangeDataset(p.root, 0, 4), [](const Scope& s, const std::vector<Output>& x) {
    // Dividing by x fails for the element 0 only (integer division by zero).
    return std::vector<Output>{ops::Div(s, Tensor::Scalar<int64_t>(12), x[0])};
  });
  p.Finish(ds);
  auto s = p.Open();
  std::vector<Tensor> out;
  Status st = s->Run({}, {p.next[0].name()}, {}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st;
  EXPECT_THAT(st.message(), HasSubstr("In the function of a MapDataset"));
  EXPECT_THAT(st.message(), HasSubstr("IteratorGetNext"));
  EXPECT_THAT(Scalars(Drain(*s, p)), ElementsAre(12, 6, 4));
}

TEST_F(DatasetTest, FilterKeepsElementsWherePredicateHolds) {
  Pipeline p;
  auto ds = ops::Filter(p.root, ops::RangeDataset(p.root, 0, 10), [](const Scope& s, const std::vector<Output>& x) {
    return ops::Greater(s, Times(s, x[0], 2), Tensor::Scalar<int64_t>(9));
  });
  p.Finish(ds);
  auto s = p.Open();
  EXPECT_THAT(Scalars(Drain(*s, p)), ElementsAre(5, 6, 7, 8, 9));
}

TEST_F(DatasetTest, FilterPredicateMustReturnScalarBool) {
  Pipeline p;
  auto ds = ops::Filter(p.root, ops::RangeDataset(p.root, 0, 10),
                        [](const Scope& s, const std::vector<Output>& x) { return Times(s, x[0], 2); });
  p.Finish(ds);
  auto s = testing::MakeSession(p.root);
  Status st = s->Run({}, {}, {p.it.initializer.name()}, nullptr);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("must return a scalar bool"));
}

TEST_F(DatasetTest, InterleaveFollowsTensorFlowsOrder) {
  // tf.data's documented example: range(1, 6).interleave(lambda x: from_tensors(x).repeat(6),
  // cycle_length=2, block_length=4).
  Pipeline p;
  auto ds = ops::Interleave(
      p.root, ops::RangeDataset(p.root, 1, 6),
      [](const Scope& s, const std::vector<Output>& x) {
        return ops::Repeat(s, ops::TensorDataset(s, {x[0]}), 6);
      },
      2, 4);
  p.Finish(ds);
  auto s = p.Open();
  EXPECT_THAT(Scalars(Drain(*s, p)),
              ElementsAreArray({1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5}));
}

TEST_F(DatasetTest, PaddedBatchPadsToTheLongestOrTheGivenShape) {
  Pipeline p;
  auto seqs = ops::Map(p.root, ops::RangeDataset(p.root, 1, 5), [](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{ops::Fill(s, ops::Reshape(s, x[0], {1}), x[0])};
  });
  auto ds = ops::PaddedBatch(p.root, seqs, 2, {TensorShape({-1})}, {Tensor::Scalar<int64_t>(-7)});
  p.Finish(ds);
  auto s = p.Open();
  std::vector<Tensor> batches = Drain(*s, p);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].shape().DebugString(), "[2,2]");
  EXPECT_THAT(Values<int64_t>(batches[0]), ElementsAre(1, -7, 2, 2));
  EXPECT_EQ(batches[1].shape().DebugString(), "[2,4]");
  EXPECT_THAT(Values<int64_t>(batches[1]), ElementsAre(3, 3, 3, -7, 4, 4, 4, 4));

  Pipeline fixed;
  auto seqs2 = ops::Map(fixed.root, ops::RangeDataset(fixed.root, 1, 5), [](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{ops::Fill(s, ops::Reshape(s, x[0], {1}), x[0])};
  });
  fixed.Finish(ops::PaddedBatch(fixed.root, seqs2, 4, {TensorShape({3})}, {Tensor::Scalar<int64_t>(0)}));
  auto s2 = fixed.Open();
  std::vector<Tensor> out;
  Status st = s2->Run({}, {fixed.next[0].name()}, {}, &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("pad to a smaller size"));
}

TEST_F(DatasetTest, BatchOfDifferentShapesIsAnErrorAndTheIteratorGoesOn) {
  Pipeline p;
  auto seqs = ops::Map(p.root, ops::RangeDataset(p.root, 1, 5), [](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{ops::Fill(s, ops::Reshape(s, x[0], {1}), x[0])};
  });
  p.Finish(ops::Batch(p.root, seqs, 2));
  auto s = p.Open();
  std::vector<Tensor> out;
  Status st = s->Run({}, {p.next[0].name()}, {}, &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("Cannot batch tensors with different shapes in component 0"));
  EXPECT_EQ(s->Run({}, {p.next[0].name()}, {}, &out).code(), Code::kInvalidArgument);
  EXPECT_EQ(s->Run({}, {p.next[0].name()}, {}, &out).code(), Code::kOutOfRange);
}

TEST_F(DatasetTest, CacheRunsTheUpstreamOncePerCompletePass) {
  testing::ClearRecordedTags();
  Pipeline p;
  auto ds = ops::Map(p.root, ops::RangeDataset(p.root, 0, 5), [](const Scope& s, const std::vector<Output>& x) {
    Output rec = Record(s.WithOpName("rec"), "map");
    return std::vector<Output>{ops::Identity(s.WithControlDependencies({rec.op()}), x[0])};
  });
  p.Finish(ops::Repeat(p.root, ops::Cache(p.root, ds), 3));
  auto s = p.Open();
  std::vector<int64_t> want;
  for (int r = 0; r < 3; ++r)
    for (int64_t v : Iota(5)) want.push_back(v);
  EXPECT_EQ(Scalars(Drain(*s, p)), want);
  EXPECT_EQ(testing::RecordedTags().size(), 5u);
}

// Replayed passes equal the first, whether the elements agree in shape (a pass packed into
// one tensor per component) or not (a pass kept element by element).
TEST_F(DatasetTest, CacheReplaysElementsOfOneShapeAndOfManyShapes) {
  for (bool one_shape : {true, false}) {
    Pipeline p;
    auto ds = ops::Map(p.root, ops::RangeDataset(p.root, 0, 4), [&](const Scope& s, const std::vector<Output>& x) {
      Output length = one_shape ? ops::Const(s, Tensor::FromVector<int64_t>({3})) : ops::Reshape(s, x[0], {1});
      return std::vector<Output>{ops::Fill(s, length, x[0]), ops::Mul(s, x[0], Tensor::Scalar<int64_t>(10))};
    });
    p.Finish(ops::Repeat(p.root, ops::Cache(p.root, ds), 3));
    auto s = p.Open();
    std::vector<Tensor> rows, scalars;
    for (;;) {
      std::vector<Tensor> got;
      Status st = s->Run({}, {p.next[0].name(), p.next[1].name()}, {}, &got);
      if (st.code() == Code::kOutOfRange) break;
      ASSERT_TRUE(st.ok()) << st;
      rows.push_back(got[0]);
      scalars.push_back(got[1]);
    }
    ASSERT_EQ(rows.size(), 12u);
    for (size_t i = 0; i < rows.size(); ++i) {
      const int64_t x = static_cast<int64_t>(i % 4);
      SCOPED_TRACE(StrCat("one shape ", one_shape, ", element ", i));
      EXPECT_EQ(rows[i].shape(), TensorShape({one_shape ? 3 : x}));
      for (int64_t v : rows[i].flat<int64_t>()) EXPECT_EQ(v, x);
      EXPECT_EQ(scalars[i].shape(), TensorShape());
      EXPECT_EQ(scalars[i].data<int64_t>()[0], 10 * x);
    }
  }
}

TEST_F(DatasetTest, PrefetchProducesWhileTheConsumerWorks) {
  testing::ClearRecordedTags();
  Pipeline p;
  auto ds = ops::Map(p.root, ops::RangeDataset(p.root, 0, 6), [](const Scope& s, const std::vector<Output>& x) {
    Output rec = Record(s.WithOpName("rec"), "produce", 30);
    return std::vector<Output>{ops::Identity(s.WithControlDependencies({rec.op()}), x[0])};
  });
  p.Finish(ops::Prefetch(p.root, ds, 2));
  Output consume = Record(p.root.WithOpName("consume"), "consume", 30, {p.next[0].op()});
  auto s = p.Open();
  for (int i = 0; i < 6; ++i) {
    std::vector<Tensor> out;
    ASSERT_TRUE(s->Run({}, {p.next[0].name()}, {consume.node->name()}, &out).ok());
    EXPECT_EQ(out[0].data<int64_t>()[0], i);
  }
  // Some element was produced while a step was consuming an earlier one.
  std::vector<testing::RecordedSpan> spans = testing::RecordedSpans();
  int overlaps = 0;
  for (const auto& c : spans) {
    if (c.tag != "consume") continue;
    for (const auto& m : spans) {
      if (m.tag == "produce" && m.start < c.end && c.start < m.end) ++overlaps;
    }
  }
  EXPECT_GE(overlaps, 3) << "prefetching did not overlap production with consumption";
}

TEST_F(DatasetTest, OneShotIteratorRunsItsDatasetOpsOnce) {
  testing::ClearRecordedTags();
  Pipeline p;
  Output rec = Record(p.root.WithOpName("rec"), "factory");
  auto start = ops::Identity(p.root.WithOpName("start").WithControlDependencies({rec.op()}), int64_t{0});
  p.Finish(ops::RangeDataset(p.root, start, 4), /*one_shot=*/true);
  auto s = p.Open();
  EXPECT_THAT(Scalars(Drain(*s, p)), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(testing::RecordedTags().size(), 1u);
}

TEST_F(DatasetTest, MakeIteratorWithAnotherElementTypeIsAnError) {
  Pipeline p;
  p.Finish(ops::RangeDataset(p.root, 0, 3));
  auto floats = ops::TensorSliceDataset(p.root, {Tensor::FromVector<float>({1, 2})});
  NodeSpec def;
  def.op = "MakeIterator";
  def.inputs = {floats.handle.name(), p.it.handle.name()};
  p.root.WithOpName("bad_init").AddNode(std::move(def));
  auto s = testing::MakeSession(p.root);
  Status st = s->Run({}, {}, {"bad_init"}, nullptr);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("[int64]"));
  EXPECT_THAT(st.message(), HasSubstr("[float32]"));
  ASSERT_TRUE(s->Run({}, {}, {p.it.initializer.name()}, nullptr).ok());
  EXPECT_EQ(Scalars(Drain(*s, p)), Iota(3));
}

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("tessera_dataset_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& content) const {
    std::string file = (path_ / name).string();
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }
  std::string WriteGz(const std::string& name, const std::string& content) const {
    std::string file = (path_ / name).string();
    gzFile f = gzopen(file.c_str(), "wb");
    gzwrite(f, content.data(), static_cast<unsigned>(content.size()));
    gzclose(f);
    return file;
  }

 private:
  std::filesystem::path path_;
};

TEST_F(DatasetTest, TextLinesThroughDecodeCsv) {
  TempDir dir;
  std::string a = dir.Write("a.csv", "1.,,44\r\n2.5,3,\n");
  std::string b = dir.Write("b.csv", "x,1,2\n7,8,9");
  Pipeline p;
  auto lines = ops::TextLineDataset(p.root, Tensor::FromVector<std::string>({a, b}));
  auto rows = ops::Map(p.root, lines, [](const Scope& s, const std::vector<Output>& line) {
    return ops::DecodeCSV(s, line[0], {5.0f, int32_t{6}, int32_t{7}});
  });
  p.Finish(rows);
  auto s = p.Open();
  auto next = [&](std::vector<Tensor>* out) {
    return s->Run({}, {p.next[0].name(), p.next[1].name(), p.next[2].name()}, {}, out);
  };
  std::vector<Tensor> out;
  ASSERT_TRUE(next(&out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 1.0f);
  EXPECT_EQ(out[1].data<int32_t>()[0], 6);
  EXPECT_EQ(out[2].data<int32_t>()[0], 44);
  ASSERT_TRUE(next(&out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 2.5f);
  EXPECT_EQ(out[2].data<int32_t>()[0], 7);
  Status st = next(&out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("x,1,2"));
  ASSERT_TRUE(next(&out).ok()) << "a malformed row is skipped, the next one read";
  EXPECT_EQ(out[0].data<float>()[0], 7.0f);
  EXPECT_EQ(next(&out).code(), Code::kOutOfRange);
}

TEST_F(DatasetTest, MissingTextFileIsNotFound) {
  Pipeline p;
  p.Finish(ops::TextLineDataset(p.root, "/nonexistent/lines.txt"));
  auto s = p.Open();
  std::vector<Tensor> out;
  Status st = s->Run({}, {p.next[0].name()}, {}, &out);
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("/nonexistent/lines.txt"));
}

std::string Idx(std::vector<uint32_t> dims, const std::string& data, unsigned char type = 0x08) {
  std::string s = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  return s + data;
}

TEST_F(DatasetTest, IdxFilesPlainAndGzipped) {
  TempDir dir;
  std::string records = {1, 2, 3, 4, 5, 6};
  for (const std::string& file :
       {dir.Write("r.idx", Idx({3, 2}, records)), dir.WriteGz("r.idx.gz", Idx({3, 2}, records))}) {
    Pipeline p;
    auto ds = ops::IdxDataset(p.root, file, TensorShape({2}));
    p.Finish(ds);
    auto s = p.Open();
    std::vector<Tensor> rows = Drain(*s, p);
    ASSERT_EQ(rows.size(), 3u) << file;
    EXPECT_EQ(rows[2].dtype(), DataType::kUInt8);
    EXPECT_THAT(Values<uint8_t>(rows[2]), ElementsAre(5, 6));
  }
}

TEST_F(DatasetTest, MalformedIdxFilesAreClearErrors) {
  TempDir dir;
  struct Case {
    std::string file;
    Code code;
    std::string text;
  } cases[] = {
      {dir.Write("magic.idx", "PK\x03\x04zip"), Code::kInvalidArgument, "not an IDX file"},
      {dir.Write("float.idx", Idx({1}, "abcd", 0x0D)), Code::kUnimplemented, "only unsigned bytes"},
      {dir.Write("short.idx", std::string("\0\0\x08\x02\0\0", 6)), Code::kDataLoss, "header"},
      {"/nonexistent.idx", Code::kNotFound, "/nonexistent.idx"},
  };
  for (const Case& c : cases) {
    Pipeline p;
    p.Finish(ops::IdxDataset(p.root, c.file));
    auto s = testing::MakeSession(p.root);
    Status st = s->Run({}, {}, {p.it.initializer.name()}, nullptr);
    if (st.ok()) {
      std::vector<Tensor> out;
      st = s->Run({}, {p.next[0].name()}, {}, &out);
    }
    EXPECT_EQ(st.code(), c.code) << c.file << ": " << st;
    EXPECT_THAT(st.message(), HasSubstr(c.text)) << c.file;
  }
}

TEST_F(DatasetTest, TruncatedIdxFileGivesItsWholeRecordsThenDataLossThenTheEnd) {
  TempDir dir;
  Pipeline p;
  p.Finish(ops::IdxDataset(p.root, dir.Write("truncated.idx", Idx({3, 2}, {7, 8, 9, 10, 11}))));
  auto s = p.Open();
  std::vector<Tensor> out;
  for (uint8_t first : {7, 9}) {
    ASSERT_TRUE(s->Run({}, {p.next[0].name()}, {}, &out).ok());
    EXPECT_THAT(Values<uint8_t>(out[0]), ElementsAre(first, first + 1));
  }
  Status st = s->Run({}, {p.next[0].name()}, {}, &out);
  EXPECT_EQ(st.code(), Code::kDataLoss) << st;
  EXPECT_THAT(st.message(), HasSubstr("truncated.idx' is truncated"));
  EXPECT_THAT(st.message(), HasSubstr("record 2"));
  EXPECT_EQ(s->Run({}, {p.next[0].name()}, {}, &out).code(), Code::kOutOfRange);
}

TEST_F(DatasetTest, IdxFileWhoseRecordShapeChangesBetweenPassesIsFailedPrecondition) {
  TempDir dir;
  const std::string file = dir.Write("r.idx", Idx({2, 2}, {1, 2, 3, 4}));
  Pipeline p;
  p.Finish(ops::Repeat(p.root, ops::IdxDataset(p.root, file, TensorShape({2})), 2));
  auto s = p.Open();
  std::vector<Tensor> out;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(s->Run({}, {p.next[0].name()}, {}, &out).ok());
  dir.Write("r.idx", Idx({2, 3}, {1, 2, 3, 4, 5, 6}));
  Status st = s->Run({}, {p.next[0].name()}, {}, &out);
  EXPECT_EQ(st.code(), Code::kFailedPrecondition) << st;
  EXPECT_THAT(st.message(), HasSubstr("r.idx' changed: its records are now of shape [3], not [2]"));
}

TEST_F(DatasetTest, FashionMnistThroughANormalisingPipeline) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir + "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  Pipeline p;
  auto images = ops::IdxDataset(p.root, dir + "t10k-images-idx3-ubyte.gz", TensorShape({28, 28}));
  auto labels = ops::IdxDataset(p.root, dir + "t10k-labels-idx1-ubyte.gz", TensorShape({}));
  auto ds = ops::Map(p.root, ops::Zip(p.root, {images, labels}), [](const Scope& s, const std::vector<Output>& x) {
    auto pixels = ops::Mul(s, ops::Cast(s, x[0], DataType::kFloat), 1.0f / 255);
    return std::vector<Output>{pixels, ops::Cast(s, x[1], DataType::kInt32)};
  }, 2);
  p.Finish(ops::Prefetch(p.root, ops::Batch(p.root, ds, 1000), 2));
  EXPECT_EQ(p.next[0].node->output_shape(0).DebugString(), "[?,28,28]");
  auto s = p.Open();
  std::vector<Tensor> pixels = Drain(*s, p, 0);
  ASSERT_EQ(pixels.size(), 10u);
  float lo = 1, hi = 0;
  for (float v : Values<float>(pixels[0])) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);
  ASSERT_TRUE(s->Run({}, {}, {p.it.initializer.name()}, nullptr).ok());
  std::vector<Tensor> labels_out = Drain(*s, p, 1);
  std::vector<int> counts(10);
  for (const Tensor& b : labels_out)
    for (int32_t l : Values<int32_t>(b)) ++counts.at(l);
  EXPECT_THAT(counts, ::testing::Each(1000)) << "the test set has 1,000 images of each class";
}

TEST_F(DatasetTest, SessionsOnALocalServerShareAnIteratorPlainSessionsDoNot) {
  Pipeline p;
  p.Finish(ops::RangeDataset(p.root, 0, 6), /*one_shot=*/true);
  GraphSpec def;
  ASSERT_TRUE(p.root.ToSpec(&def).ok());
  auto server = Server::CreateLocal({});
  ASSERT_TRUE(server.ok()) << server.status();
  auto a = Session::Create((*server)->target(), {}, def);
  auto b = Session::Create((*server)->target(), {}, def);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<int64_t> seen;
  for (int i = 0; i < 3; ++i) {
    for (Session* s : {a->get(), b->get()}) seen.push_back(testing::Fetch(*s, p.next[0].name()).data<int64_t>()[0]);
  }
  EXPECT_EQ(seen, Iota(6));

  auto c = Session::Create({}, def);
  auto d = Session::Create({}, def);
  ASSERT_TRUE(c.ok() && d.ok());
  EXPECT_EQ(testing::Fetch(**c, p.next[0].name()).data<int64_t>()[0], 0);
  EXPECT_EQ(testing::Fetch(**d, p.next[0].name()).data<int64_t>()[0], 0);
}

TEST_F(DatasetTest, ConcurrentRunsTakeEachElementOnce) {
  Pipeline p;
  auto ds = ops::Map(p.root, ops::RangeDataset(p.root, 0, 400), [](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{Times(s, x[0], 1)};
  }, 2);
  p.Finish(ops::Prefetch(p.root, ds, 4));
  auto s = p.Open();
  std::mutex mu;
  std::vector<int64_t> all;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<Tensor> got = Drain(*s, p);
      std::lock_guard<std::mutex> lock(mu);
      for (int64_t v : Scalars(got)) all.push_back(v);
    });
  }
  for (auto& t : threads) t.join();
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, Iota(400));
}

TEST_F(DatasetTest, GraphsWithFunctionsRoundTripThroughJson) {
  Pipeline p;
  auto ds = ops::Interleave(
      p.root, ops::RangeDataset(p.root, 0, 3),
      [](const Scope& s, const std::vector<Output>& x) {
        auto inner = ops::Map(s, ops::Repeat(s, ops::TensorDataset(s, {x[0]}), 2),
                              [](const Scope& s2, const std::vector<Output>& y) {
                                return std::vector<Output>{Times(s2, y[0], 10)};
                              });
        return inner;
      },
      2, 1);
  p.Finish(ds, /*one_shot=*/true);
  GraphSpec def;
  ASSERT_TRUE(p.root.ToSpec(&def).ok());
  std::string json = GraphSpecToJson(def);
  auto back = GraphSpecFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(GraphSpecToJson(*back), json);
  auto s = Session::Create({}, *back);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(Scalars(Drain(**s, p)), ElementsAre(0, 10, 0, 10, 20, 20));
}

TEST_F(DatasetTest, MalformedFunctionsInJsonAreClearErrors) {
  const char* bad_ret = R"({"nodes": [
      {"name": "r", "op": "RangeDataset", "inputs": ["a", "a", "a"],
       "attrs": {"output_types": ["int64"], "output_shapes": [[]]}},
      {"name": "a", "op": "Const", "attrs": {"value": {"dtype": "int64", "shape": [], "data": [1]}, "dtype": "int64"}},
      {"name": "m", "op": "MapDataset", "inputs": ["r"],
       "attrs": {"output_types": ["int64"], "output_shapes": [[]],
                 "f": {"args": ["x"], "rets": ["nope:0"],
                       "nodes": [{"name": "x", "op": "Placeholder", "attrs": {"dtype": "int64"}}]}}}]})";
  auto def = GraphSpecFromJson(bad_ret);
  ASSERT_TRUE(def.ok()) << def.status();
  auto s = Session::Create({}, *def);
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<Tensor> out;
  Status st = (*s)->Run({}, {"m"}, {}, &out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("names no tensor of its body"));
  EXPECT_THAT(st.message(), HasSubstr("node m (MapDataset)"));

  auto unknown = GraphSpecFromJson(R"({"nodes": [{"name": "m", "op": "MapDataset", "inputs": ["r"],
      "attrs": {"f": {"args": [], "rets": [], "nodes": [{"name": "x", "op": "Frobnicate"}]}}}]})");
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("in a function body"));
}

// Counts its live iterators, and records how many were live when each was made.
class CountingDataset : public Dataset {
 public:
  CountingDataset() : Dataset("CountingDataset", {DataType::kInt64}, {TensorShape({})}) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv&) const override {
    live_when_made.push_back(live);
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(&live));
  }
  mutable int live = 0;
  mutable std::vector<int> live_when_made;

 private:
  class Iterator : public DatasetIterator {
   public:
    explicit Iterator(int* live) : live_(live) { ++*live_; }
    ~Iterator() override { --*live_; }
    Status GetNext(const IteratorContext&, std::vector<Tensor>* out, bool*) override {
      out->push_back(Tensor::Scalar<int64_t>(1));
      return Status::OK();
    }

   private:
    int* live_;
  };
};

TEST_F(DatasetTest, ReinitializingEndsThePreviousPassBeforeStartingTheNext) {
  // Two passes alive at once would hold two shuffle buffers and two prefetch buffers.
  IteratorResource iterator({DataType::kInt64}, {TensorShape({})});
  auto dataset = std::make_shared<CountingDataset>();
  for (int pass = 0; pass < 3; ++pass) {
    ASSERT_TRUE(iterator.Initialize(dataset, {}, "test").ok());
    std::vector<Tensor> element;
    ASSERT_TRUE(iterator.GetNext(IteratorContext{}, &element).ok());
  }
  EXPECT_THAT(dataset->live_when_made, ElementsAre(0, 0, 0));
  EXPECT_EQ(dataset->live, 1);
}

}  // namespace
}  // namespace tessera
