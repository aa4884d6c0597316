// Inference with a trained model: load the graph `tessera train --inference-graph` wrote,
// restore the checkpoint `--checkpoint` wrote into it, and classify Fashion-MNIST's test
// images in batches.
//
//   classify GRAPH.json CHECKPOINT [IMAGES]     (IMAGES: how many test images, 10000)
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "graph/graph_json.h"
#include "kernels/data/idx_file.h"
#include "runtime/session.h"

using namespace tessera;

namespace {

constexpr const char* kClasses[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

int Fail(const Status& s) {
  std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: classify GRAPH.json CHECKPOINT [IMAGES]\n");
    return 2;
  }
  std::ifstream file(argv[1]);
  std::stringstream text;
  text << file.rdbuf();
  StatusOr<GraphDef> graph = GraphDefFromJson(text.str());
  if (!graph.ok()) return Fail(graph.status());
  StatusOr<std::unique_ptr<Session>> session = Session::Create(SessionConfig(), *graph);
  if (!session.ok()) return Fail(session.status());
  // The graph's Saver: feed the checkpoint's path, run its restore op.
  std::vector<Tensor> out;
  Status s = (*session)->Run({{"save/filename", Tensor::Scalar(std::string(argv[2]))}}, {}, {"save/restore_all"}, &out);
  if (!s.ok()) return Fail(s);

  const char* dir_env = std::getenv("FASHION_MNIST_DIR");
  const std::string dir = dir_env != nullptr ? dir_env : "/usr/share/datasets/fashion-mnist";
  StatusOr<Tensor> pixels = ReadIdxFile(dir + "/t10k-images-idx3-ubyte.gz");
  StatusOr<Tensor> labels = ReadIdxFile(dir + "/t10k-labels-idx1-ubyte.gz");
  if (!pixels.ok() || !labels.ok()) return Fail(pixels.ok() ? labels.status() : pixels.status());
  const int64_t total = std::min<int64_t>(argc > 3 ? std::atoll(argv[3]) : 10000, labels->NumElements());
  constexpr int64_t kBatch = 1000, kPixels = 28 * 28;
  int64_t correct = 0;
  for (int64_t start = 0; start < total; start += kBatch) {
    const int64_t n = std::min(kBatch, total - start);
    Tensor images(DataType::kFloat, TensorShape({n, 28, 28, 1}));
    for (int64_t i = 0; i < n * kPixels; ++i) {
      images.data<float>()[i] = pixels->data<uint8_t>()[start * kPixels + i] / 255.0f;
    }
    s = (*session)->Run({{"images", images}}, {"classes"}, {}, &out);
    if (!s.ok()) return Fail(s);
    for (int64_t i = 0; i < n; ++i) {
      const int predicted = out[0].data<int32_t>()[i], actual = labels->data<uint8_t>()[start + i];
      correct += predicted == actual;
      if (start + i < 3) std::printf("image %lld: %s (label: %s)\n", static_cast<long long>(start + i), kClasses[predicted], kClasses[actual]);
    }
  }
  std::printf("accuracy on %lld test images: %.4f\n", static_cast<long long>(total),
              static_cast<double>(correct) / static_cast<double>(total));
  return 0;
}
