// The RecvTensor response's bytes: what the server writes from a tensor's own memory is the
// message protobuf would write, it decodes to the same tensor however gRPC cuts it into
// slices, and bytes from a broken or hostile peer are an error, never a crash.
#include "distributed/recv_tensor_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "distributed/protos/worker_service.pb.h"
#include "graph/serialize/tensor_codec.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

std::string Flatten(const grpc::ByteBuffer& buffer) {
  grpc::Slice slice;
  EXPECT_TRUE(buffer.DumpToSingleSlice(&slice).ok());
  return std::string(reinterpret_cast<const char*>(slice.begin()), slice.size());
}

// `bytes` as a buffer of slices cut at `cuts`.
grpc::ByteBuffer Cut(const std::string& bytes, std::vector<size_t> cuts) {
  std::vector<grpc::Slice> slices;
  size_t begin = 0;
  cuts.push_back(bytes.size());
  for (size_t end : cuts) {
    slices.emplace_back(bytes.data() + begin, end - begin);
    begin = end;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

Tensor Iota(int64_t n) {
  Tensor t(DataType::kFloat, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(i) * 0.5f;
  return t;
}

TEST(RecvTensorWireTest, TheBytesAreTheProtobufMessage) {
  const Tensor t = Iota(1000);
  StatusOr<grpc::ByteBuffer> wire = EncodeRecvTensorResponse(t);
  ASSERT_TRUE(wire.ok()) << wire.status();
  rpc::RecvTensorResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(*wire)));
  StatusOr<std::string> plain = EncodeTensor(t);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(parsed.tensor(), *plain);

  rpc::RecvTensorResponse by_protobuf;
  by_protobuf.set_tensor(*plain);
  EXPECT_EQ(Flatten(*wire), by_protobuf.SerializeAsString());
}

TEST(RecvTensorWireTest, TheServersBufferSharesTheTensorsMemoryAndKeepsItAlive) {
  grpc::ByteBuffer wire;
  const void* memory = nullptr;
  {
    Tensor t = Iota(4096);
    memory = t.raw_data();
    StatusOr<grpc::ByteBuffer> encoded = EncodeRecvTensorResponse(t);
    ASSERT_TRUE(encoded.ok());
    wire = *std::move(encoded);
  }
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(wire.Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(static_cast<const void*>(slices[1].begin()), memory);
  StatusOr<Tensor> back = DecodeRecvTensorResponse(wire);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data<float>()[4095], 4095 * 0.5f);
}

TEST(RecvTensorWireTest, EveryDtypeAndShapeComesBack) {
  Tensor strings(DataType::kString, TensorShape({3}));
  strings.data<std::string>()[0] = "";
  strings.data<std::string>()[1] = "tessera";
  strings.data<std::string>()[2] = std::string(300, 'x');
  Tensor ints(DataType::kInt64, TensorShape({2, 3}));
  for (int i = 0; i < 6; ++i) ints.data<int64_t>()[i] = int64_t{1} << (10 * i);
  Tensor scalar(DataType::kDouble, TensorShape({}));
  scalar.data<double>()[0] = -2.25;
  const Tensor view = Iota(100).Slice(10, 20);
  for (const Tensor& t : {strings, ints, scalar, view, Tensor(DataType::kFloat, TensorShape({0, 7}))}) {
    SCOPED_TRACE(t.DebugString());
    StatusOr<grpc::ByteBuffer> wire = EncodeRecvTensorResponse(t);
    ASSERT_TRUE(wire.ok()) << wire.status();
    StatusOr<Tensor> back = DecodeRecvTensorResponse(*wire);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*EncodeTensor(*back), *EncodeTensor(t));
  }
}

TEST(RecvTensorWireTest, AnyCutIntoSlicesDecodesTheSame) {
  const Tensor t = Iota(5);
  const std::string bytes = Flatten(*EncodeRecvTensorResponse(t));
  for (size_t a = 0; a <= bytes.size(); ++a) {
    for (size_t b = a; b <= bytes.size(); b += 3) {
      StatusOr<Tensor> back = DecodeRecvTensorResponse(Cut(bytes, {a, b}));
      ASSERT_TRUE(back.ok()) << "cut at " << a << ", " << b << ": " << back.status();
      EXPECT_EQ(*EncodeTensor(*back), *EncodeTensor(t));
    }
  }
}

TEST(RecvTensorWireTest, BrokenResponsesAreErrors) {
  const std::string good = Flatten(*EncodeRecvTensorResponse(Iota(8)));
  auto decode = [](const std::string& bytes) { return DecodeRecvTensorResponse(Cut(bytes, {})).status(); };
  EXPECT_THAT(decode("").message(), HasSubstr("not one tensor field"));
  for (size_t n = 1; n < good.size(); ++n) {
    EXPECT_FALSE(decode(good.substr(0, n)).ok()) << "truncated to " << n;
  }
  EXPECT_FALSE(decode(good + "x").ok());
  std::string other_field = good;
  other_field[0] = (2 << 3) | 2;
  EXPECT_FALSE(decode(other_field).ok());

  // A shape that claims more elements than were sent, with the lengths kept consistent.
  rpc::RecvTensorResponse lying;
  std::string tensor = *EncodeTensor(Iota(8));
  const int64_t more = 9;
  std::memcpy(tensor.data() + 7, &more, sizeof(more));
  lying.set_tensor(tensor);
  Status s = decode(lying.SerializeAsString());
  EXPECT_EQ(s.code(), Code::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr("shape [9]"));

  rpc::RecvTensorResponse not_a_tensor;
  not_a_tensor.set_tensor("hello");
  EXPECT_EQ(decode(not_a_tensor.SerializeAsString()).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
