#include "training/fashion_cnn.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "graph/builder/initializers.h"

namespace tessera {

namespace {

Tensor Zeros(const TensorShape& shape) {
  Tensor t(DataType::kFloat, shape);
  std::fill(t.data<float>(), t.data<float>() + t.NumElements(), 0.0f);
  return t;
}

}  // namespace

std::vector<Output> FashionCnn::Variables() const {
  std::vector<Output> out;
  for (const auto& [name, var] : variables) out.push_back(var);
  return out;
}

FashionCnn CreateFashionCnn(const Scope& scope, const MakeVariable& make, int64_t seed, bool initializers) {
  const std::vector<std::pair<std::string, TensorShape>> layers = {
      {"conv2d", TensorShape({3, 3, 1, 32})},
      {"conv2d_1", TensorShape({3, 3, 32, 64})},
      {"dense", TensorShape({5 * 5 * 64, 64})},
      {"dense_1", TensorShape({64, 10})}};
  FashionCnn cnn;
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& [layer, shape] = layers[i];
    const TensorShape bias({shape.dim(shape.rank() - 1)});
    const std::string kernel_name = layer + "/kernel";
    Input kernel_init = initializers ? Input(GlorotUniform(scope.WithOpName(kernel_name + "/Initializer"), shape,
                                                           DataType::kFloat, seed + static_cast<int64_t>(i)))
                                     : Input(Zeros(shape));
    cnn.variables.emplace_back(kernel_name, make(kernel_name, kernel_init));
    cnn.variables.emplace_back(layer + "/bias", make(layer + "/bias", Zeros(bias)));
  }
  return cnn;
}

Output FashionCnnLogits(const Scope& scope, const FashionCnn& cnn, Input images) {
  // Each variable is read once, as TF1's `<variable>/read` does, and the gradients use that
  // value: read lazily, a backward op could see the update its own step already applied.
  std::vector<Output> read;
  for (const auto& [name, variable] : cnn.variables) read.push_back(ops::Identity(scope.WithOpName(name + "/read"), variable));
  auto var = [&](size_t i) { return read[i]; };
  auto conv = [&](const Scope& s, Output x, size_t layer) {
    return ops::Relu(s, ops::BiasAdd(s, ops::Conv2D(s, x, var(2 * layer), {1, 1, 1, 1}, "VALID"), var(2 * layer + 1)));
  };
  auto pool = [](const Scope& s, Output x) { return ops::MaxPool(s, x, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"); };
  Output x = scope.AsOutput(images);
  x = pool(scope.NewSubScope("max_pooling2d"), conv(scope.NewSubScope("conv2d"), x, 0));
  x = pool(scope.NewSubScope("max_pooling2d_1"), conv(scope.NewSubScope("conv2d_1"), x, 1));
  x = ops::Flatten(scope.NewSubScope("flatten"), x);
  const Scope dense = scope.NewSubScope("dense");
  x = ops::Relu(dense, ops::BiasAdd(dense, ops::MatMul(dense, x, var(4)), var(5)));
  const Scope dense_1 = scope.NewSubScope("dense_1");
  return ops::BiasAdd(dense_1, ops::MatMul(dense_1, x, var(6)), var(7));
}

StatusOr<FashionCnnInference> BuildFashionCnnInference() {
  Scope root = Scope::NewRootScope();
  std::map<std::string, std::vector<Output>> variables;
  FashionCnn cnn = CreateFashionCnn(
      root,
      [&](const std::string& name, Input init) {
        Output var = ops::Variable(root.WithOpName(name), init.tensor().shape(), DataType::kFloat);
        variables[name] = {var};
        return var;
      },
      0, /*initializers=*/false);
  auto images = ops::Placeholder(root.WithOpName("images"), DataType::kFloat, TensorShape({-1, 28, 28, 1}));
  Output logits = ops::Identity(root.WithOpName("logits"), FashionCnnLogits(root.NewSubScope("model"), cnn, images));
  ops::Softmax(root.WithOpName("probabilities"), logits);
  ops::ArgMax(root.WithOpName("classes"), logits, 1, DataType::kInt32);
  FashionCnnInference out;
  ASSIGN_OR_RETURN(out.saver, Saver::Create(root, variables));
  RETURN_IF_ERROR(root.ToSpec(&out.graph));
  return out;
}

std::string FashionMnistDir() {
  const char* dir = std::getenv("FASHION_MNIST_DIR");
  return dir != nullptr && *dir != '\0' ? std::string(dir) : std::string("/usr/share/datasets/fashion-mnist");
}

ops::Dataset FashionMnist(const Scope& scope, const std::string& dir, const std::string& split) {
  const Scope s = scope.NewSubScope(split);
  auto images = ops::IdxDataset(s, StrCat(dir, "/", split, "-images-idx3-ubyte.gz"), TensorShape({28, 28}));
  auto labels = ops::IdxDataset(s, StrCat(dir, "/", split, "-labels-idx1-ubyte.gz"), TensorShape({}));
  return ops::Cache(s, ops::Zip(s, {images, labels}));
}

ops::Dataset FashionMnistBatches(const Scope& scope, const ops::Dataset& elements, int64_t batch,
                                 bool drop_remainder) {
  return ops::Map(scope, ops::Batch(scope, elements, batch, {.drop_remainder = drop_remainder}),
                  [](const Scope& f, const std::vector<Output>& x) {
                    Output pixels = ops::Mul(f, ops::Cast(f, x[0], DataType::kFloat), 1.0f / 255);
                    return std::vector<Output>{
                        ops::Reshape(f, pixels, Tensor::FromVector<int32_t>({-1, 28, 28, 1})),
                        ops::Cast(f, x[1], DataType::kInt32)};
                  });
}

}  // namespace tessera
