// Graph wrappers for tf.data: datasets, their transformations and iterators.
//
//   Scope root = Scope::NewRootScope();
//   ops::Dataset ds = ops::RangeDataset(root, 0, 10);
//   ds = ops::Map(root, ds, [](const Scope& s, const std::vector<Output>& x) {
//     return std::vector<Output>{ops::Mul(s, x[0], int64_t{2})};
//   });
//   ds = ops::Batch(root, ops::Repeat(root, ds, 3), 7);
//   ops::Iterator it = ops::InitializableIterator(root.WithOpName("it"), ds);
//   std::vector<Output> next = ops::GetNext(root.WithOpName("next"), it);
//   // Run it.initializer once, then fetch next[0] until OutOfRange.
//
// An ops::Dataset carries the element it yields (dtypes and static shapes) along with its
// handle, as tf.data's Python classes do, and each wrapper writes it into the node's
// output_types and output_shapes. Functions (map, filter, interleave) are built into their
// own graphs by calling the given C++ callable once, at graph-building time. Like every
// wrapper, call them from the one thread building the graph.
#pragma once

#include <functional>

#include "graph/builder/function_builder.h"
#include "graph/builder/scope.h"

namespace tessera::ops {

struct Dataset {
  Output handle;  // a scalar variant
  std::vector<DataType> dtypes;
  std::vector<TensorShape> shapes;
};

// tf.data.Dataset.from_tensors: one element, the components.
Dataset TensorDataset(const Scope& s, const std::vector<Input>& components);
// from_tensor_slices: element i holds row i of every component.
Dataset TensorSliceDataset(const Scope& s, const std::vector<Input>& components);
Dataset RangeDataset(const Scope& s, Input start, Input stop, Input step = int64_t{1});
// The lines of the files (a string scalar or vector), without line endings.
Dataset TextLineDataset(const Scope& s, Input filenames);
// The records of an IDX file (MNIST's format, plain or gzipped): uint8 tensors of the
// shape the file gives after its first dimension, checked against `record_shape`.
Dataset IdxDataset(const Scope& s, Input filename, TensorShape record_shape = TensorShape::UnknownRank());

// count -1 repeats forever (and Skip skips everything, Take takes everything).
Dataset Repeat(const Scope& s, const Dataset& input, Input count = int64_t{-1});
Dataset Skip(const Scope& s, const Dataset& input, Input count);
Dataset Take(const Scope& s, const Dataset& input, Input count);

struct BatchAttrs {
  bool drop_remainder = false;
};
Dataset Batch(const Scope& s, const Dataset& input, Input batch_size, const BatchAttrs& attrs = {});
// Pads component i to padded_shapes[i] (a -1 dimension to the batch's largest) with the
// scalar padding_values[i].
Dataset PaddedBatch(const Scope& s, const Dataset& input, Input batch_size,
                    const std::vector<TensorShape>& padded_shapes, const std::vector<Input>& padding_values,
                    const BatchAttrs& attrs = {});

struct ShuffleAttrs {
  int64_t seed = 0;  // seed and seed2 both 0: a fresh random order
  int64_t seed2 = 0;
  bool reshuffle_each_iteration = true;
};
Dataset Shuffle(const Scope& s, const Dataset& input, Input buffer_size, const ShuffleAttrs& attrs = {});
// buffer_size -1 is AUTOTUNE.
Dataset Prefetch(const Scope& s, const Dataset& input, Input buffer_size = int64_t{-1});
// Keeps the first complete pass in memory.
Dataset Cache(const Scope& s, const Dataset& input);
Dataset Zip(const Scope& s, const std::vector<Dataset>& inputs);

// f gets one Output per component of the input's element and returns the new element.
// num_parallel_calls > 1 (or -1, AUTOTUNE) runs calls on the intra-op pool, results in
// input order.
Dataset Map(const Scope& s, const Dataset& input, const FunctionBody& f, int64_t num_parallel_calls = 1);
using Predicate = std::function<Output(const Scope&, const std::vector<Output>&)>;
Dataset Filter(const Scope& s, const Dataset& input, const Predicate& predicate);
using DatasetFunction = std::function<Dataset(const Scope&, const std::vector<Output>&)>;
Dataset Interleave(const Scope& s, const Dataset& input, const DatasetFunction& f, int64_t cycle_length,
                   int64_t block_length = 1);

struct Iterator {
  Output handle;
  Operation initializer;  // MakeIterator; empty for a one-shot iterator
  std::vector<DataType> dtypes;
  std::vector<TensorShape> shapes;
};
// An iterator that starts a pass each time `initializer` runs (make_initializable_iterator).
Iterator InitializableIterator(const Scope& s, const Dataset& dataset);
// make_one_shot_iterator: the ops `dataset` depends on are copied into the iterator's
// dataset_factory function and run once, at the iterator's first use; they may not depend on
// placeholders.
Iterator OneShotIterator(const Scope& s, const Dataset& dataset);
// One element per Session::Run, however many fetches name its outputs.
std::vector<Output> GetNext(const Scope& s, const Iterator& iterator);

}  // namespace tessera::ops
