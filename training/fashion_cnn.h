// The seeds' Fashion-MNIST model and data, shared by `tessera train`, the tests and the
// benchmarks: Conv2D(32, 3x3, relu) -> MaxPool 2x2 -> Conv2D(64, 3x3, relu) -> MaxPool 2x2
// -> Flatten -> Dense(64, relu) -> Dense(10), with Keras's layer names and defaults
// (Glorot-uniform kernels, zero biases).
//
//   FashionCnn cnn = CreateFashionCnn(scope, [&](const std::string& name, Input init) {
//     return tower.Variable(name, init);
//   }, /*seed=*/1);
//   Output logits = FashionCnnLogits(scope, cnn, images);   // images [N, 28, 28, 1] in [0, 1]
//
// Graph-building functions: one thread per graph, as for every wrapper.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "graph/builder/dataset_ops.h"
#include "graph/builder/ops.h"
#include "training/saver.h"

namespace tessera {

struct FashionCnn {
  // (name, variable) in layer order: conv2d/kernel, conv2d/bias, ..., dense_1/bias.
  std::vector<std::pair<std::string, Output>> variables;
  std::vector<Output> Variables() const;
};

// Makes the variable `name` starting at `initial_value` (a Tensor or an op's output).
using MakeVariable = std::function<Output(const std::string& name, Input initial_value)>;

// Kernels start Glorot-uniform (seeded from `seed`, one stream per kernel), biases at
// zero. With `initializers` false every initial value is a zero Tensor, which adds no
// nodes: for towers whose variables copy another's.
FashionCnn CreateFashionCnn(const Scope& scope, const MakeVariable& make, int64_t seed, bool initializers = true);

Output FashionCnnLogits(const Scope& scope, const FashionCnn& cnn, Input images);

// The model for inference: a float placeholder "images" [batch, 28, 28, 1] in [0, 1] gives
// "logits", "probabilities" (softmax) and "classes" (int32 argmax), over variables named as
// in training, with a Saver (nodes "save/...") to restore them from a training checkpoint.
struct FashionCnnInference {
  GraphSpec graph;
  Saver saver;
};
StatusOr<FashionCnnInference> BuildFashionCnnInference();

// Where Debian's dataset-fashion-mnist puts the IDX files, or $FASHION_MNIST_DIR.
std::string FashionMnistDir();

// The training ("train") or test ("t10k") split from `dir` as stored: uint8 images
// [28, 28] and uint8 labels, for shuffling and batching before FashionMnistBatches. Kept in
// memory after the first pass (47 MB for "train"), so later epochs do not inflate the files
// again on the pipeline's thread.
ops::Dataset FashionMnist(const Scope& scope, const std::string& dir, const std::string& split);

// Batches of `batch` of FashionMnist's elements (a shorter last one unless
// `drop_remainder`) as the model reads them: images [n, 28, 28, 1] float in [0, 1] and int32
// labels. Converted a batch at a time: one function call per batch instead of one per
// image, on the pipeline's thread, which at two threads shares the cores with the step.
ops::Dataset FashionMnistBatches(const Scope& scope, const ops::Dataset& elements, int64_t batch, bool drop_remainder);

}  // namespace tessera
