// Schemas of the tf.data ops: datasets are scalar variant tensors, iterators string
// handles [container, name] like queues. Every dataset op declares the element it yields
// (output_types, output_shapes) as TensorFlow's do; its kernel checks the dataset it makes
// against them.
#include <vector>

#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {
namespace {

constexpr const char* kOutputTypes = "output_types: list(type) >= 1";
constexpr const char* kOutputShapes = "output_shapes: list(shape) >= 1";

Status ComponentsFromAttr(InferenceContext& c) {
  std::vector<TensorShape> shapes;
  RETURN_IF_ERROR(c.GetAttr("output_shapes", &shapes));
  for (int i = 0; i < c.num_outputs() && i < static_cast<int>(shapes.size()); ++i) c.set_output(i, shapes[i]);
  return Status::OK();
}

Status HandleShape(InferenceContext& c) {
  c.set_output(0, TensorShape({2}));
  return Status::OK();
}

// A dataset op: `inputs` then the element attrs, one variant output.
OpDefBuilder DatasetOp(const char* name, const std::vector<const char*>& inputs) {
  OpDefBuilder b(name);
  for (const char* in : inputs) b.Input(in);
  b.Output("handle: variant").SetShapeFn(ScalarShape);
  return b;
}

}  // namespace

void RegisterDataOps(OpRegistry& r) {
  // Sources.
  for (const char* op : {"TensorDataset", "TensorSliceDataset"}) {
    RegisterCoreOp(r, DatasetOp(op, {"components: Toutput_types"})
                          .Attr("Toutput_types: list(type) >= 1").Attr(kOutputShapes));
  }
  RegisterCoreOp(r, DatasetOp("RangeDataset", {"start: int64", "stop: int64", "step: int64"})
                        .Attr(kOutputTypes).Attr(kOutputShapes));
  RegisterCoreOp(r, DatasetOp("TextLineDataset", {"filenames: string"}));
  // Tessera's own: the records of one IDX file (the MNIST format, optionally gzipped).
  RegisterCoreOp(r, DatasetOp("IdxDataset", {"filename: string"}).Attr("element_shape: shape = unknown"));

  // Transformations of one input dataset.
  const std::pair<const char*, std::vector<const char*>> kUnary[] = {
      {"RepeatDataset", {"input_dataset: variant", "count: int64"}},
      {"SkipDataset", {"input_dataset: variant", "count: int64"}},
      {"TakeDataset", {"input_dataset: variant", "count: int64"}},
      {"BatchDatasetV2", {"input_dataset: variant", "batch_size: int64", "drop_remainder: bool"}},
      {"PrefetchDataset", {"input_dataset: variant", "buffer_size: int64"}},
      {"CacheDataset", {"input_dataset: variant", "filename: string"}},
      {"MapDataset", {"input_dataset: variant"}},
      {"ParallelMapDataset", {"input_dataset: variant", "num_parallel_calls: int32"}},
      {"FilterDataset", {"input_dataset: variant"}},
      {"InterleaveDataset", {"input_dataset: variant", "cycle_length: int64", "block_length: int64"}},
  };
  for (const auto& [op, inputs] : kUnary) {
    OpDefBuilder b = DatasetOp(op, inputs);
    b.Attr(kOutputTypes).Attr(kOutputShapes);
    const std::string_view name = op;
    if (name == "MapDataset" || name == "ParallelMapDataset" || name == "InterleaveDataset") b.Attr("f: func");
    if (name == "FilterDataset") b.Attr("predicate: func");
    RegisterCoreOp(r, b);
  }
  RegisterCoreOp(r, DatasetOp("ShuffleDataset",
                              {"input_dataset: variant", "buffer_size: int64", "seed: int64", "seed2: int64"})
                        .Attr("reshuffle_each_iteration: bool = true").Attr(kOutputTypes).Attr(kOutputShapes));
  RegisterCoreOp(r, DatasetOp("PaddedBatchDatasetV2",
                              {"input_dataset: variant", "batch_size: int64", "padded_shapes: N * int64",
                               "padding_values: Toutput_types", "drop_remainder: bool"})
                        .Attr("Toutput_types: list(type) >= 1").Attr(kOutputShapes).Attr("N: int >= 1"));
  RegisterCoreOp(r, DatasetOp("ZipDataset", {"input_datasets: N * variant"})
                        .Attr(kOutputTypes).Attr(kOutputShapes).Attr("N: int >= 1"));

  // Iterators.
  RegisterCoreOp(r, OpDefBuilder("Iterator").Output("handle: string").Attr("shared_name: string = \"\"")
                        .Attr("container: string = \"\"").Attr(kOutputTypes).Attr(kOutputShapes)
                        .SetIsStateful().SetShapeFn(HandleShape));
  RegisterCoreOp(r, OpDefBuilder("OneShotIterator").Output("handle: string").Attr("dataset_factory: func")
                        .Attr("shared_name: string = \"\"").Attr("container: string = \"\"")
                        .Attr(kOutputTypes).Attr(kOutputShapes).SetIsStateful().SetShapeFn(HandleShape));
  RegisterCoreOp(r, OpDefBuilder("MakeIterator").Input("dataset: variant").Input("iterator: string")
                        .SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("IteratorGetNext").Input("iterator: string").Output("components: output_types")
                        .Attr(kOutputTypes).Attr(kOutputShapes).SetIsStateful()
                        .SetShapeFn(ComponentsFromAttr));
  // An iterator's handle as one string a script can feed (a feedable iterator), and back;
  // empty output_types take the iterator's, whatever they are.
  RegisterCoreOp(r, OpDefBuilder("IteratorToStringHandle").Input("resource_handle: string")
                        .Output("string_handle: string").SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("IteratorFromStringHandle").Input("string_handle: string")
                        .Output("resource_handle: string").Attr("output_types: list(type) >= 0")
                        .Attr("output_shapes: list(shape) >= 0").SetIsStateful().SetShapeFn(HandleShape));
}

}  // namespace tessera
