#include "graph/serialize/summary.h"

#include <algorithm>
#include <cfloat>
#include <set>

#include "graph/protos/summary.pb.h"

namespace tessera {
namespace {

const std::vector<double>& BucketLimits() {
  static const std::vector<double> limits = [] {
    std::vector<double> positive;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) positive.push_back(v);
    positive.push_back(DBL_MAX);
    std::vector<double> all;
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) all.push_back(-*it);
    all.push_back(0.0);
    all.insert(all.end(), positive.begin(), positive.end());
    return all;
  }();
  return limits;
}

}  // namespace

SummaryHistogram::SummaryHistogram()
    : min_(BucketLimits().back()), max_(-BucketLimits().back()), counts_(BucketLimits().size(), 0.0) {}

void SummaryHistogram::Add(double value) {
  const std::vector<double>& limits = BucketLimits();
  // The bucket whose limit is the first above `value`; DBL_MAX's takes the largest.
  const size_t b = std::min<size_t>(std::upper_bound(limits.begin(), limits.end(), value) - limits.begin(),
                                    limits.size() - 1);
  counts_[b] += 1;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  num_ += 1;
  sum_ += value;
  sum_squares_ += value * value;
}

SummaryBuilder::SummaryBuilder() : summary_(std::make_unique<tfgraph::Summary>()) {}
SummaryBuilder::~SummaryBuilder() = default;

void SummaryBuilder::AddScalar(const std::string& tag, float value) {
  tfgraph::Summary::Value* v = summary_->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
}

void SummaryBuilder::AddHistogram(const std::string& tag, const SummaryHistogram& h) {
  tfgraph::Summary::Value* v = summary_->add_value();
  v->set_tag(tag);
  tfgraph::HistogramProto* p = v->mutable_histo();
  p->set_min(h.min_);
  p->set_max(h.max_);
  p->set_num(h.num_);
  p->set_sum(h.sum_);
  p->set_sum_squares(h.sum_squares_);
  const std::vector<double>& limits = BucketLimits();
  for (size_t i = 0; i < h.counts_.size();) {
    double end = limits[i], count = h.counts_[i++];
    if (count == 0) {
      for (; i < h.counts_.size() && h.counts_[i] == 0; ++i) end = limits[i];
    }
    p->add_bucket_limit(end);
    p->add_bucket(count);
  }
}

void SummaryBuilder::AddImage(const std::string& tag, int height, int width, int channels, std::string png) {
  tfgraph::Summary::Value* v = summary_->add_value();
  v->set_tag(tag);
  tfgraph::Summary::Image* image = v->mutable_image();
  image->set_height(height);
  image->set_width(width);
  image->set_colorspace(channels);
  image->set_encoded_image_string(std::move(png));
}

std::string SummaryBuilder::Serialize() const { return summary_->SerializeAsString(); }

StatusOr<std::string> MergeSummaries(const std::vector<std::string>& summaries) {
  std::set<std::string> tags;
  std::string merged;
  for (size_t i = 0; i < summaries.size(); ++i) {
    tfgraph::Summary s;
    if (!s.ParseFromString(summaries[i])) {
      return errors::InvalidArgument("Could not parse input ", i, " as a Summary");
    }
    for (const tfgraph::Summary::Value& v : s.value()) {
      if (!tags.insert(v.tag()).second) {
        return errors::InvalidArgument("Duplicate tag ", v.tag(), " found in summary inputs");
      }
    }
    merged += summaries[i];
  }
  return merged;
}

}  // namespace tessera
