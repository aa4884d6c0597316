// Feeds arbitrary bytes, split into lines, to DecodeCSV with columns of every type: every
// input must decode or give an InvalidArgument, never crash or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>

#include "graph/builder/ops.h"
#include "runtime/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  static Session* session = [] {
    Scope root = Scope::NewRootScope();
    auto records = ops::Placeholder(root.WithOpName("records"), DataType::kString);
    ops::DecodeCSV(root.WithOpName("csv"), records,
                   {Tensor::FromVector<float>({0}), Tensor::FromVector<int32_t>({0}), Tensor(DataType::kInt64, TensorShape({0})),
                    Tensor::FromVector<double>({0}), Tensor::FromVector<std::string>({""})});
    GraphSpec def;
    if (!root.ToSpec(&def).ok()) std::abort();
    auto s = Session::Create({}, def);
    if (!s.ok()) std::abort();
    return s->release();
  }();
  std::vector<std::string> lines;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(in, line) && lines.size() < 64;) lines.push_back(line);
  if (lines.empty()) return 0;
  std::vector<Tensor> out;
  Status s = session->Run({{"records", Tensor::FromVector<std::string>(lines)}},
                          {"csv:0", "csv:1", "csv:2", "csv:3", "csv:4"}, {}, &out);
  if (!s.ok() && s.code() != Code::kInvalidArgument) std::abort();
  return 0;
}
