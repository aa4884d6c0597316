#include "graph/serialize/tensor_codec.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

Tensor RoundTrip(const Tensor& t) {
  StatusOr<std::string> wire = EncodeTensor(t);
  EXPECT_TRUE(wire.ok()) << wire.status();
  StatusOr<Tensor> back = DecodeTensor(wire.ok() ? *wire : "");
  EXPECT_TRUE(back.ok()) << back.status();
  return back.ok() ? *back : Tensor();
}

TEST(TensorCodecTest, RoundTripsEveryEncodableType) {
  Tensor f = Tensor::FromVector<float>({1.5f, -2, 3, 4, 5, 6}, TensorShape({2, 3}));
  Tensor back = RoundTrip(f);
  EXPECT_EQ(back.shape(), f.shape());
  EXPECT_EQ(back.dtype(), DataType::kFloat);
  EXPECT_EQ(std::vector<float>(back.data<float>(), back.data<float>() + 6),
            std::vector<float>(f.data<float>(), f.data<float>() + 6));

  Tensor i = RoundTrip(Tensor::FromVector<int64_t>({-1, int64_t{1} << 40}));
  EXPECT_EQ(i.data<int64_t>()[1], int64_t{1} << 40);
  EXPECT_EQ(RoundTrip(Tensor::FromVector<uint8_t>({255})).data<uint8_t>()[0], 255);
  EXPECT_EQ(RoundTrip(Tensor::FromVector<bool>({true, false})).data<bool>()[0], true);

  Tensor s = RoundTrip(Tensor::FromVector<std::string>({"", std::string("a\0b", 3), "longer"}));
  ASSERT_EQ(s.NumElements(), 3);
  EXPECT_EQ(s.data<std::string>()[1], std::string("a\0b", 3));
  EXPECT_EQ(s.data<std::string>()[2], "longer");

  Tensor scalar = RoundTrip(Tensor::FromVector<double>({2.5}, TensorShape({})));
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.data<double>()[0], 2.5);
  EXPECT_EQ(RoundTrip(Tensor(DataType::kFloat, TensorShape({0, 7}))).shape(), TensorShape({0, 7}));
}

TEST(TensorCodecTest, NumericBodyIsTheRawBuffer) {
  Tensor t = Tensor::FromVector<int32_t>({1, 2, 3});
  std::string wire = *EncodeTensor(t);
  // magic, version, dtype, rank, one dim, then 12 bytes of elements
  EXPECT_EQ(wire.size(), 4u + 3 + 8 + 12);
  EXPECT_EQ(wire.substr(0, 4), "TNSR");
}

TEST(TensorCodecTest, RefusesWhatItCannotTrust) {
  std::string good = *EncodeTensor(Tensor::FromVector<float>({1, 2}));
  auto code = [](std::string_view bytes) { return DecodeTensor(bytes).status().code(); };
  EXPECT_EQ(code(""), Code::kInvalidArgument);
  EXPECT_EQ(code("TNSX" + good.substr(4)), Code::kInvalidArgument);
  std::string bad_version = good;
  bad_version[4] = 9;
  EXPECT_EQ(code(bad_version), Code::kInvalidArgument);
  std::string bad_dtype = good;
  bad_dtype[5] = static_cast<char>(DataType::kVariant);
  EXPECT_EQ(code(bad_dtype), Code::kInvalidArgument);
  std::string bad_rank = good;
  bad_rank[6] = 100;
  EXPECT_EQ(code(bad_rank), Code::kInvalidArgument);
  EXPECT_EQ(code(good.substr(0, good.size() - 1)), Code::kDataLoss);
  EXPECT_EQ(code(good + "x"), Code::kInvalidArgument);

  // A shape of 2^62 x 4 floats: refused before anything is allocated.
  std::string huge = good.substr(0, 7);
  huge[6] = 2;
  for (int64_t d : {int64_t{1} << 62, int64_t{4}}) huge.append(reinterpret_cast<const char*>(&d), 8);
  EXPECT_NE(DecodeTensor(huge).status().code(), Code::kOk);
  std::string many = good.substr(0, 7);
  int64_t billion = 1000000000;
  many.append(reinterpret_cast<const char*>(&billion), 8);
  EXPECT_EQ(code(many), Code::kDataLoss);

  // A string whose length runs past the end.
  std::string str = *EncodeTensor(Tensor::FromVector<std::string>({"abc"}));
  str[15] = 100;
  EXPECT_EQ(code(str), Code::kDataLoss);
}

TEST(TensorCodecTest, VariantsHaveNoEncoding) {
  Tensor v(DataType::kVariant, TensorShape({}));
  EXPECT_EQ(EncodeTensor(v).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
