// Helpers shared by the test suites: run a Scope-built graph in a session and fetch.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "graph/builder/ops.h"
#include "runtime/session.h"

namespace tessera::testing {

inline std::unique_ptr<Session> MakeSession(const Scope& root, SessionConfig config = {}) {
  GraphSpec def;
  Status s = root.ToSpec(&def);
  EXPECT_TRUE(s.ok()) << s;
  auto session = Session::Create(config, def);
  EXPECT_TRUE(session.ok()) << session.status();
  return session.ok() ? std::move(*session) : nullptr;
}

// Fetches one output; fails the test (and returns an empty tensor) on error.
inline Tensor Fetch(Session& s, const std::string& name,
                    const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  std::vector<Tensor> out;
  Status st = s.Run(feeds, {name}, {}, &out);
  EXPECT_TRUE(st.ok()) << st;
  return st.ok() ? out[0] : Tensor();
}

inline Tensor Eval(const Scope& root, const Output& out) {
  auto s = MakeSession(root);
  return s == nullptr ? Tensor() : Fetch(*s, out.name());
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.NumElements());
}

// The largest |a[i] - b[i]| of two float32 tensors; infinity when their shapes differ.
inline double MaxAbsDifference(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(a.data<float>()[i] - b.data<float>()[i])));
  }
  return worst;
}

}  // namespace tessera::testing
