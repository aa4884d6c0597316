#include "training/gradient_buckets.h"

#include <map>

namespace tessera {

std::vector<std::vector<int>> AssignGradientBuckets(const std::vector<GradientSize>& gradients,
                                                    int64_t bucket_bytes) {
  std::vector<std::vector<int>> buckets;
  struct Open {
    int bucket = -1;
    int64_t bytes = 0;
  };
  std::map<DataType, Open> open;  // the bucket still filling, per dtype
  for (int i = 0; i < static_cast<int>(gradients.size()); ++i) {
    const GradientSize& g = gradients[i];
    Open& o = open[g.dtype];
    if (o.bucket < 0 || o.bytes + g.bytes > bucket_bytes) {
      o.bucket = static_cast<int>(buckets.size());
      o.bytes = 0;
      buckets.emplace_back();
    }
    buckets[o.bucket].push_back(i);
    o.bytes += g.bytes;
  }
  return buckets;
}

}  // namespace tessera
