// The RecvTensor stream's bytes: what the server writes from a tensor's own memory is the
// messages protobuf would write, they assemble to the same tensor however gRPC cuts them
// into slices, and bytes from a broken or hostile peer are an error, never a crash.
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

std::vector<std::string> Messages(const Tensor& t, size_t part_bytes) {
  StatusOr<std::vector<grpc::ByteBuffer>> parts = EncodeRecvTensorStream(t, part_bytes);
  EXPECT_TRUE(parts.ok()) << parts.status();
  std::vector<std::string> out;
  for (const grpc::ByteBuffer& p : *parts) out.push_back(Flatten(p));
  return out;
}

StatusOr<Tensor> Assemble(const std::vector<std::string>& messages, size_t max_bytes = SIZE_MAX) {
  RecvTensorAssembler assembler(max_bytes);
  for (const std::string& m : messages) RETURN_IF_ERROR(assembler.Add(Cut(m, {})));
  return assembler.Finish();
}

TEST(RecvTensorWireTest, ADeadValueIsOneIsDeadMessage) {
  const std::vector<std::string> messages = Messages(Tensor(), 1000);
  ASSERT_EQ(messages.size(), 1u);
  rpc::RecvTensorResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(messages[0]));
  EXPECT_TRUE(parsed.is_dead());
  EXPECT_TRUE(parsed.tensor_part().empty());
  StatusOr<Tensor> got = Assemble(messages);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->IsInitialized());
  // Nothing may follow it, and it is no tensor's first part either.
  EXPECT_EQ(Assemble({messages[0], Messages(Iota(3), 1000)[0]}).status().code(), Code::kDataLoss);
  EXPECT_EQ(Assemble({std::string("\x10\x02", 2)}).status().code(), Code::kDataLoss);
}

TEST(RecvTensorWireTest, EachPartIsAProtobufMessageAndTogetherTheyAreTheTensor) {
  const Tensor t = Iota(1000);
  const std::vector<std::string> messages = Messages(t, 1000);
  ASSERT_EQ(messages.size(), 4u);  // 4000 bytes of elements in fours, the header before the first
  std::string joined;
  for (const std::string& m : messages) {
    rpc::RecvTensorResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(m));
    EXPECT_EQ(parsed.SerializeAsString(), m);
    joined += parsed.tensor_part();
  }
  EXPECT_EQ(joined, *EncodeTensor(t));
  rpc::RecvTensorResponse first;
  ASSERT_TRUE(first.ParseFromString(messages[0]));
  EXPECT_EQ(first.tensor_part().size(), EncodeTensorHeader(t)->size() + 1000);
  EXPECT_EQ(Messages(Iota(3), kRecvTensorPartBytes).size(), 1u);
}

TEST(RecvTensorWireTest, ThePartsShareTheTensorsMemoryAndKeepItAlive) {
  std::vector<grpc::ByteBuffer> parts;
  const char* memory = nullptr;
  {
    Tensor t = Iota(4096);
    memory = static_cast<const char*>(t.raw_data());
    StatusOr<std::vector<grpc::ByteBuffer>> encoded = EncodeRecvTensorStream(t, 5000);
    ASSERT_TRUE(encoded.ok());
    parts = *std::move(encoded);
  }
  ASSERT_EQ(parts.size(), 4u);  // 16384 bytes in parts of 5000
  for (size_t i = 0; i < parts.size(); ++i) {
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(parts[i].Dump(&slices).ok());
    EXPECT_EQ(static_cast<const void*>(slices.back().begin()), memory + i * 5000);
  }
  RecvTensorAssembler assembler;
  for (const grpc::ByteBuffer& p : parts) ASSERT_TRUE(assembler.Add(p).ok());
  StatusOr<Tensor> back = assembler.Finish();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data<float>()[4095], 4095 * 0.5f);
}

TEST(RecvTensorWireTest, EveryDtypeShapeAndPartSizeComesBack) {
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
    for (size_t part_bytes : {size_t{1}, size_t{7}, size_t{40}, kRecvTensorPartBytes}) {
      SCOPED_TRACE(t.DebugString() + " in parts of " + std::to_string(part_bytes));
      StatusOr<Tensor> back = Assemble(Messages(t, part_bytes));
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(*EncodeTensor(*back), *EncodeTensor(t));
    }
  }
  EXPECT_FALSE(EncodeRecvTensorStream(ints, 0).ok());
}

TEST(RecvTensorWireTest, AnyCutOfAPartIntoSlicesAssemblesTheSame) {
  const Tensor t = Iota(5);
  const std::vector<std::string> messages = Messages(t, 12);
  for (size_t m = 0; m < messages.size(); ++m) {
    const std::string& bytes = messages[m];
    for (size_t a = 0; a <= bytes.size(); ++a) {
      for (size_t b = a; b <= bytes.size(); b += 3) {
        RecvTensorAssembler assembler;
        for (size_t i = 0; i < messages.size(); ++i) {
          ASSERT_TRUE(assembler.Add(i == m ? Cut(bytes, {a, b}) : Cut(messages[i], {})).ok())
              << "part " << m << " cut at " << a << ", " << b;
        }
        StatusOr<Tensor> back = assembler.Finish();
        ASSERT_TRUE(back.ok()) << back.status();
        EXPECT_EQ(*EncodeTensor(*back), *EncodeTensor(t));
      }
    }
  }
}

TEST(RecvTensorWireTest, BrokenStreamsAreErrors) {
  const std::vector<std::string> good = Messages(Iota(8), 16);  // the header and 16 bytes, then 16
  ASSERT_EQ(good.size(), 2u);
  ASSERT_TRUE(Assemble(good).ok());

  EXPECT_THAT(Assemble({}).status().message(), HasSubstr("before its tensor's header"));
  EXPECT_THAT(Assemble({""}).status().message(), HasSubstr("not one tensor part"));
  for (size_t n = 1; n < good[1].size(); ++n) {
    EXPECT_FALSE(Assemble({good[0], good[1].substr(0, n)}).ok()) << "a part truncated to " << n;
  }
  Status short_stream = Assemble({good[0]}).status();
  EXPECT_EQ(short_stream.code(), Code::kDataLoss);
  EXPECT_THAT(short_stream.message(), HasSubstr("ended after 16 of the 32 bytes"));
  Status long_stream = Assemble({good[0], good[1], good[1]}).status();
  EXPECT_EQ(long_stream.code(), Code::kDataLoss);
  EXPECT_THAT(long_stream.message(), HasSubstr("more elements"));
  std::string other_field = good[1];
  other_field[0] = (2 << 3) | 2;
  EXPECT_FALSE(Assemble({good[0], other_field}).ok());
  // A first part that stops inside the header.
  rpc::RecvTensorResponse half_header;
  half_header.set_tensor_part(EncodeTensorHeader(Iota(8))->substr(0, 9));
  EXPECT_FALSE(Assemble({half_header.SerializeAsString()}).ok());

  // A shape that claims fewer elements than are sent.
  rpc::RecvTensorResponse lying;
  std::string header = *EncodeTensorHeader(Iota(8));
  const int64_t fewer = 3;
  std::memcpy(header.data() + 7, &fewer, sizeof(fewer));
  lying.set_tensor_part(header);
  Status s = Assemble({lying.SerializeAsString(), good[1]}).status();
  EXPECT_EQ(s.code(), Code::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr("shape [3]"));

  rpc::RecvTensorResponse not_a_tensor;
  not_a_tensor.set_tensor_part("hello");
  EXPECT_EQ(Assemble({not_a_tensor.SerializeAsString()}).status().code(), Code::kInvalidArgument);

  Tensor word(DataType::kString, TensorShape({}));
  word.data<std::string>()[0] = "w";
  EXPECT_THAT(Assemble({Messages(word, 16)[0], good[1]}).status().message(), HasSubstr("goes on after"));

  RecvTensorAssembler taken;
  ASSERT_TRUE(taken.Add(Cut(good[0], {})).ok());
  EXPECT_FALSE(taken.Complete());
  ASSERT_TRUE(taken.Add(Cut(good[1], {})).ok());
  ASSERT_TRUE(taken.Complete());
  ASSERT_TRUE(taken.Finish().ok());
  EXPECT_EQ(taken.Add(Cut(good[1], {})).code(), Code::kFailedPrecondition);
  EXPECT_EQ(taken.Finish().status().code(), Code::kFailedPrecondition);

  Status too_big = Assemble(good, 31).status();
  EXPECT_EQ(too_big.code(), Code::kResourceExhausted) << too_big;
  EXPECT_THAT(too_big.message(), HasSubstr("float32 tensor of shape [8]"));
  EXPECT_TRUE(Assemble(good, 32).ok());
}

}  // namespace
}  // namespace tessera
