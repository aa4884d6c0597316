#include "graph/tensor.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>

namespace tessera {
namespace {

TEST(TensorShapeTest, UnknownDimsAndCompatibility) {
  TensorShape partial({-1, 2});
  EXPECT_FALSE(partial.IsFullyDefined());
  EXPECT_EQ(partial.num_elements(), -1);
  EXPECT_EQ(partial.DebugString(), "[?,2]");
  EXPECT_TRUE(partial.IsCompatibleWith(TensorShape({5, 2})));
  EXPECT_FALSE(partial.IsCompatibleWith(TensorShape({5, 3})));
  EXPECT_FALSE(partial.IsCompatibleWith(TensorShape({2})));
  EXPECT_TRUE(TensorShape::UnknownRank().IsCompatibleWith(TensorShape({1, 2, 3})));
  EXPECT_EQ(TensorShape().num_elements(), 1);
}

TEST(TensorShapeTest, MakeRejectsBadInput) {
  std::vector<int64_t> too_many(TensorShape::kMaxRank + 1, 1);
  EXPECT_EQ(TensorShape::Make(too_many).status().code(), Code::kInvalidArgument);
  std::vector<int64_t> negative = {2, -5};
  EXPECT_EQ(TensorShape::Make(negative).status().code(), Code::kInvalidArgument);
}

TEST(TensorTest, SliceSharesBufferWithoutCopy) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Tensor row = t.Slice(1, 3);
  EXPECT_EQ(row.shape(), TensorShape({2, 2}));
  EXPECT_TRUE(row.SharesBufferWith(t));
  EXPECT_EQ(row.data<float>()[0], 3);
  row.data<float>()[0] = 30;
  EXPECT_EQ(t.data<float>()[2], 30);
  EXPECT_FALSE(t.BufferIsUnshared());
}

TEST(TensorTest, SubSliceIsOneRowWithoutItsDimension) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Tensor row = t.SubSlice(2);
  EXPECT_EQ(row.shape(), TensorShape({2}));
  EXPECT_TRUE(row.SharesBufferWith(t));
  EXPECT_EQ(row.data<float>()[0], 5);
  EXPECT_EQ(row.data<float>()[1], 6);
  Tensor scalar = Tensor::FromVector<int32_t>({7, 8}).SubSlice(1);
  EXPECT_EQ(scalar.shape(), TensorShape());
  EXPECT_EQ(scalar.data<int32_t>()[0], 8);
  EXPECT_EQ(Tensor(DataType::kFloat, TensorShape({2, 0})).SubSlice(1).NumElements(), 0);
}

TEST(TensorTest, DeepCopyIsIndependent) {
  Tensor t = Tensor::FromVector<int32_t>({1, 2, 3});
  Tensor c = t.DeepCopy();
  c.data<int32_t>()[0] = 9;
  EXPECT_EQ(t.data<int32_t>()[0], 1);
  EXPECT_FALSE(c.SharesBufferWith(t));
  EXPECT_TRUE(c.BufferIsUnshared());
}

TEST(TensorTest, StringsAreConstructedAndCopied) {
  Tensor t = Tensor::FromVector<std::string>({"a", "bb", std::string(100, 'x')});
  Tensor c = t.DeepCopy();
  EXPECT_EQ(c.data<std::string>()[2].size(), 100u);
  EXPECT_TRUE(t.Equals(c));
  EXPECT_EQ(Tensor::Scalar(std::string("hi")).DebugString(), "Tensor<string, []: \"hi\">");
}

TEST(TensorTest, ReshapedChecksElementCount) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4});
  EXPECT_TRUE(t.Reshaped(TensorShape({2, 2})).ok());
  EXPECT_EQ(t.Reshaped(TensorShape({3})).status().code(), Code::kInvalidArgument);
}

TEST(TensorTest, ResizedTakesUpRoomLeftInTheBuffer) {
  Tensor whole = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6});
  StatusOr<Tensor> front = whole.Resized(TensorShape({1, 2}));
  ASSERT_TRUE(front.ok()) << front.status();
  EXPECT_EQ(front->data<float>(), whole.data<float>());
  EXPECT_EQ(front->NumElements(), 2);
  whole = Tensor();
  StatusOr<Tensor> grown = front->Resized(TensorShape({2, 3}));
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_EQ(grown->data<float>()[5], 6);
  EXPECT_EQ(front->Resized(TensorShape({7})).status().code(), Code::kOutOfRange);
  // A view that starts inside the buffer has only the room after its first element.
  Tensor tail = grown->Reshaped(TensorShape({6}))->Slice(4, 6);
  EXPECT_TRUE(tail.Resized(TensorShape({2})).ok());
  EXPECT_EQ(tail.Resized(TensorShape({3})).status().code(), Code::kOutOfRange);
  EXPECT_EQ(Tensor(DataType::kString, TensorShape({2})).Resized(TensorShape({1})).status().code(),
            Code::kUnimplemented);
  EXPECT_EQ(Tensor().Resized(TensorShape({1})).status().code(), Code::kInvalidArgument);
}

TEST(TensorTest, AllocationIsAlignedAndAccounted) {
  auto alloc = std::make_shared<TrackingAllocator>("test", CpuAllocator());
  {
    Tensor t(alloc, DataType::kDouble, TensorShape({10}));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % Allocator::kAlignment, 0u);
    EXPECT_EQ(alloc->stats().bytes_in_use, 80);
  }
  EXPECT_EQ(alloc->stats().bytes_in_use, 0);
  EXPECT_EQ(alloc->stats().peak_bytes_in_use, 80);
  EXPECT_EQ(alloc->stats().num_allocs, 1);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TESSERA_TEST_LIBC_MALLOC
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TESSERA_TEST_LIBC_MALLOC
#endif

#ifndef TESSERA_TEST_LIBC_MALLOC
int64_t MinorFaults() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}
#endif

// A step's large tensors come back for the next step's of the same size with their pages
// still mapped, instead of being faulted in again.
TEST(TensorTest, ALargeBufferFreedIsReusedForTheSameSizeWithoutFaults) {
#ifdef TESSERA_TEST_LIBC_MALLOC
  GTEST_SKIP() << "sanitizer builds allocate with libc, which the sanitizer watches";
#else
  const TensorShape shape({3 << 20});  // 12 MiB of floats
  const void* first;
  {
    Tensor t(DataType::kFloat, shape);
    std::fill(t.data<float>(), t.data<float>() + t.NumElements(), 1.f);
    first = t.raw_data();
  }
  const int64_t before = MinorFaults();
  Tensor again(DataType::kFloat, shape);
  std::fill(again.data<float>(), again.data<float>() + again.NumElements(), 2.f);
  EXPECT_EQ(again.raw_data(), first);
  EXPECT_LT(MinorFaults() - before, 64) << "12 MiB is 3072 pages";
  Tensor other(DataType::kFloat, TensorShape({4 << 20}));
  EXPECT_NE(other.raw_data(), first);
#endif
}

TEST(TensorTest, AllocateRejectsUndefinedShape) {
  EXPECT_EQ(Tensor::Allocate(CpuAllocator(), DataType::kFloat, TensorShape({-1})).status().code(),
            Code::kInvalidArgument);
}

TEST(TypesTest, HalfAndBFloat16RoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 1e-5f}) {
    EXPECT_NEAR(HalfToFloat(FloatToHalf(f)), f, std::abs(f) * 1e-3f + 1e-7f) << f;
  }
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(1e6f))));
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.0f)), 1.0f);
  EXPECT_NEAR(BFloat16ToFloat(FloatToBFloat16(3.14159f)), 3.14159f, 0.02f);
}

TEST(TypesTest, NamesAndAliases) {
  EXPECT_EQ(*DataTypeFromName("float"), DataType::kFloat);
  EXPECT_EQ(*DataTypeFromName("DT_INT64"), DataType::kInt64);
  EXPECT_EQ(DataTypeName(DataType::kHalf), "float16");
  EXPECT_FALSE(DataTypeFromName("float128").ok());
}

TEST(StatusTest, CodesAndMessages) {
  Status s = errors::NotFound("no node '", "x", "'");
  EXPECT_EQ(s.ToString(), "NotFound: no node 'x'");
  EXPECT_TRUE(Status::OK().ok());
  StatusOr<int> v = 3;
  EXPECT_EQ(*v, 3);
  StatusOr<int> e = errors::Internal("boom");
  EXPECT_EQ(e.status().code(), Code::kInternal);
}

}  // namespace
}  // namespace tessera
