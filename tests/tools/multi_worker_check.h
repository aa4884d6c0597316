// What the multi-process cluster tests share: the check that
// multi-worker training over three tasks (the workers' flags kTrainFlags) left in its chief's
// checkpoint the variables one process gives with the towers of three workers.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>

#include "graph/allocator.h"
#include "graph/serialize/tensor_bundle.h"
#include "tests/tools/run_command.h"
#include "training/trainer.h"

namespace tessera::testing {

inline TrainOptions SmallRun() {
  TrainOptions o;
  o.epochs = 1;
  o.batch = 48;
  o.train_limit = 5 * 48;
  o.test_limit = 200;
  o.progress = false;
  return o;
}

inline void ExpectCheckpointEquals(const std::string& prefix, const TrainResult& alone) {
  StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(prefix);
  ASSERT_TRUE(reader.ok()) << reader.status();
  for (const auto& [name, value] : alone.variables) {
    StatusOr<Tensor> theirs = (*reader)->Read(name, CpuAllocator());
    ASSERT_TRUE(theirs.ok()) << theirs.status();
    ASSERT_EQ(theirs->NumElements(), value.NumElements()) << name;
    double worst = 0;
    for (int64_t i = 0; i < value.NumElements(); ++i) {
      worst = std::max(worst, std::abs(double(value.data<float>()[i]) - theirs->data<float>()[i]));
    }
    EXPECT_LE(worst, 1e-4) << name;
  }
  for (const char* suffix : {".index", ".data-00000-of-00001"}) std::remove((prefix + suffix).c_str());
}

// Training alone with the towers of three workers: what each launch must give.
inline const TrainResult& OneProcess() {
  static const TrainResult* result = [] {
    TrainOptions one = SmallRun();
    one.devices = 3;
    std::ostringstream log;
    StatusOr<TrainResult> alone = Train(one, log);
    EXPECT_TRUE(alone.ok()) << alone.status();
    return new TrainResult(alone.ok() ? std::move(*alone) : TrainResult{});
  }();
  return *result;
}

inline constexpr char kTrainFlags[] =
    " train --mode multi-worker --epochs 1 --batch 48 --train-limit 240 --test-limit 200 --no-progress";

}  // namespace tessera::testing
