// TensorFlow's Summary protos (tensorflow/core/framework/summary.proto) as the summary
// kernels make them and TensorBoard reads them: scalars, histograms, PNG images, and merges
// of those.
//
//   SummaryBuilder b;
//   b.AddScalar("loss", 0.25f);
//   std::string bytes = b.Serialize();     // what a ScalarSummary op outputs
//
// Everything here is a value type or a pure function: thread-compatible.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/platform/status.h"

namespace tessera {
namespace tfgraph {
class Summary;
}

// TensorFlow's histogram (tensorflow/core/lib/histogram): a bucket ends at 0, and at each of
// +-1e-12 * 1.1^k up to 1e20, and at +-DBL_MAX, so TensorBoard's views of TF's and
// Tessera's histograms are the same.
class SummaryHistogram {
 public:
  SummaryHistogram();
  void Add(double value);

 private:
  friend class SummaryBuilder;
  double min_, max_, num_ = 0, sum_ = 0, sum_squares_ = 0;
  std::vector<double> counts_;  // one per bucket limit
};

// One Summary, value by value.
class SummaryBuilder {
 public:
  SummaryBuilder();
  ~SummaryBuilder();

  void AddScalar(const std::string& tag, float value);
  // Runs of empty buckets are written as one, as TensorFlow writes them.
  void AddHistogram(const std::string& tag, const SummaryHistogram& histogram);
  // `png` of `channels` (1-4) channels.
  void AddImage(const std::string& tag, int height, int width, int channels, std::string png);
  std::string Serialize() const;

 private:
  std::unique_ptr<tfgraph::Summary> summary_;
};

// The summaries' values as one Summary (a Summary's bytes are its values', so they
// concatenate). InvalidArgument for bytes that are not a Summary, naming the input, or a tag
// that two values share.
StatusOr<std::string> MergeSummaries(const std::vector<std::string>& summaries);

}  // namespace tessera
