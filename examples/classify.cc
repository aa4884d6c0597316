// Inference with a trained model: load the graph `tessera train --inference-graph` wrote,
// restore the checkpoint `--checkpoint` wrote into it, and classify Fashion-MNIST's test
// images in batches.
//
//   classify GRAPH.json CHECKPOINT [IMAGES]     (IMAGES: how many test images, 10000)
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "graph/platform/file_io.h"
#include "graph/serialize/graph_json.h"
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

// A class index from the model or the label file, which need not be in range.
std::string ClassName(int64_t k) { return k >= 0 && k < 10 ? kClasses[k] : "class " + std::to_string(k); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: classify GRAPH.json CHECKPOINT [IMAGES]\n");
    return 2;
  }
  int64_t wanted = 10000;
  if (argc > 3) {
    const std::string_view arg(argv[3]);
    const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), wanted);
    if (ec != std::errc() || end != arg.data() + arg.size() || wanted < 1) {
      std::fprintf(stderr, "classify: IMAGES must be a positive integer, got '%s'\n", argv[3]);
      return 2;
    }
  }
  StatusOr<std::string> text = ReadFileToString(argv[1], "graph");
  if (!text.ok()) return Fail(text.status());
  StatusOr<GraphSpec> graph = GraphSpecFromJson(*text);
  if (!graph.ok()) return Fail(graph.status());
  StatusOr<std::unique_ptr<Session>> session = Session::Create(SessionConfig(), *graph);
  if (!session.ok()) return Fail(session.status());
  // The graph's Saver: feed the checkpoint's path, run its restore op.
  std::vector<Tensor> out;
  Status s = (*session)->Run({{"save/filename", Tensor::Scalar(std::string(argv[2]))}}, {}, {"save/restore_all"}, &out);
  if (!s.ok()) return Fail(s);

  const char* dir_env = std::getenv("FASHION_MNIST_DIR");
  const std::string dir = dir_env != nullptr ? dir_env : "/usr/share/datasets/fashion-mnist";
  // Only the images asked for are read, however large the file claims to be.
  StatusOr<Tensor> pixels = ReadIdxFile(dir + "/t10k-images-idx3-ubyte.gz", wanted);
  StatusOr<Tensor> labels = ReadIdxFile(dir + "/t10k-labels-idx1-ubyte.gz", wanted);
  if (!pixels.ok() || !labels.ok()) return Fail(pixels.ok() ? labels.status() : pixels.status());
  if (pixels->rank() != 3 || pixels->dim(1) != 28 || pixels->dim(2) != 28 || labels->rank() != 1) {
    return Fail(errors::InvalidArgument("the test set holds ", pixels->shape().DebugString(), " images and ",
                                        labels->shape().DebugString(), " labels, not 28x28 images and a list"));
  }
  const int64_t total = std::min(pixels->dim(0), labels->dim(0));
  if (total == 0) return Fail(errors::InvalidArgument("the test set holds no images"));
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
    if (out[0].dtype() != DataType::kInt32 || out[0].NumElements() != n) {
      return Fail(errors::InvalidArgument("the graph's 'classes' is ", out[0].DebugString(0), ", not ", n,
                                          " int32 classes"));
    }
    for (int64_t i = 0; i < n; ++i) {
      const int predicted = out[0].data<int32_t>()[i], actual = labels->data<uint8_t>()[start + i];
      correct += predicted == actual;
      if (start + i < 3) {
        std::printf("image %lld: %s (label: %s)\n", static_cast<long long>(start + i), ClassName(predicted).c_str(),
                    ClassName(actual).c_str());
      }
    }
  }
  std::printf("accuracy on %lld test images: %.4f\n", static_cast<long long>(total),
              static_cast<double>(correct) / static_cast<double>(total));
  return 0;
}
