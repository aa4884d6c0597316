// One _BlockedConv2D between _ToBlocked and _FromBlocked, in a session with the
// graph rewrites off (the graph is all constants): the setup shared by the
// tests of our own blocked convolution loops, and the float64 epilogue they
// check against.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace tessera::testing {

struct BlockedConv {
  Tensor x;                 // NHWC
  bool nhwc_input = false;  // the convolution reads x as NHWC (a first layer), not blocked
  Tensor filter;            // a Const, or fed to the Placeholder "filter"
  bool fed_filter = false;
  Tensor bias;     // read when `fused` is not empty
  Tensor summand;  // NHWC, read when `fused` has ",Add"
  std::string fused;
  int64_t stride = 1;
  bool same = true;
  bool depthwise = false;
  int64_t block = 16;
  int threads = 1;

  bool HasSummand() const { return fused.find(",Add") != std::string::npos; }

  // The feeds of a step: the filter when it is fed.
  std::vector<std::pair<std::string, Tensor>> Feeds() const {
    if (!fed_filter) return {};
    return {{"filter", filter}};
  }

  // What the fused ops make of an output `v` of channel `o` at flat NHWC index
  // `at`.
  double Epilogue(double v, int64_t o, int64_t at) const {
    if (!fused.empty()) v += bias.data<float>()[o];
    if (HasSummand()) v += summand.data<float>()[at];
    if (fused.find("Relu6") != std::string::npos) return std::clamp(v, 0.0, 6.0);
    if (fused.find("Relu") != std::string::npos) return std::max(v, 0.0);
    return v;
  }
};

// A session whose "got" fetches the convolution's NHWC output; null (and a
// failed test) on error.
inline std::unique_ptr<Session> MakeBlockedConvSession(const BlockedConv &k) {
  Scope root = Scope::NewRootScope();
  const Output in = k.nhwc_input ? ops::Const(root, k.x)
                                 : ops::Build(root, "_ToBlocked", {ops::Const(root, k.x)}, {{"block", k.block}});
  const Output filter =
      k.fed_filter ? ops::Placeholder(root.WithOpName("filter"), DataType::kFloat) : ops::Const(root, k.filter);
  std::vector<Input> inputs = {in, filter};
  if (!k.fused.empty()) inputs.push_back(ops::Const(root, k.bias));
  if (k.HasSummand())
    inputs.push_back(ops::Build(root, "_ToBlocked", {ops::Const(root, k.summand)}, {{"block", k.block}}));
  AttrMap attrs = {{"strides", std::vector<int64_t>{1, k.stride, k.stride, 1}},
                   {"padding", std::string(k.same ? "SAME" : "VALID")},
                   {"fused_ops", k.fused},
                   {"num_args", int64_t{k.fused.empty()  ? 0
                                        : k.HasSummand() ? 2
                                                         : 1}},
                   {"depthwise", int64_t{k.depthwise}},
                   {"block", k.block}};
  if (k.nhwc_input) attrs["input_layout"] = std::string("NHWC");
  auto conv = ops::Build(root.WithOpName("conv"), "_BlockedConv2D", inputs, attrs);
  ops::Build(root.WithOpName("got"), "_FromBlocked", {conv});
  SessionConfig config;
  config.intra_op_parallelism_threads = k.threads;
  config.constant_folding = false;
  config.remapping = false;
  config.arithmetic_optimization = false;
  config.common_subexpression_elimination = false;
  return MakeSession(root, config);
}

}  // namespace tessera::testing
