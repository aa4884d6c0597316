// Schemas of checkpoints, checkpoint file names and CSV records.
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {
namespace {

// Every column has the shape of the records.
Status DecodeCsvShape(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(0));
  return Status::OK();
}

}  // namespace

void RegisterIoOps(OpRegistry& r) {
  // Checkpoints (kernels/util/checkpoint_file.h): SaveTensors writes its inputs under the given
  // names; RestoreTensors reads the named tensors back, checked against `shapes` when given
  // so that a mismatch fails before any variable is assigned.
  RegisterCoreOp(r, OpDefBuilder("SaveTensors").Input("filename: string").Input("tensor_names: string")
                  .Input("data: T").Attr("T: list(type) >= 1").SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("RestoreTensors").Input("filename: string").Input("tensor_names: string")
                  .Output("tensors: dtypes").Attr("dtypes: list(type) >= 1").Attr("shapes: list(shape) = []")
                  .SetIsStateful());

  // TensorFlow's checkpoints, tensor bundles (graph/serialize/tensor_bundle.h), as its savers
  // write them: SaveV2 writes one bundle; a sharded save writes each shard to a temporary
  // prefix named by ShardedFilename and StringJoin (string_ops.cc), then MergeV2Checkpoints
  // makes them one.
  // shape_and_slices entries must be "" (whole tensors).
  RegisterCoreOp(r, OpDefBuilder("SaveV2").Input("prefix: string").Input("tensor_names: string")
                  .Input("shape_and_slices: string").Input("tensors: dtypes").Attr("dtypes: list(type)")
                  .SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("RestoreV2").Input("prefix: string").Input("tensor_names: string")
                  .Input("shape_and_slices: string").Output("tensors: dtypes").Attr("dtypes: list(type)")
                  .SetIsStateful().SetShapeFn(UnknownShape));
  RegisterCoreOp(r, OpDefBuilder("MergeV2Checkpoints").Input("checkpoint_prefixes: string")
                  .Input("destination_prefix: string").Attr("delete_old_dirs: bool = true")
                  .Attr("allow_missing_files: bool = false").SetIsStateful());
  RegisterCoreOp(r, OpDefBuilder("ShardedFilename").Input("basename: string").Input("shard: int32")
                  .Input("num_shards: int32").Output("filename: string").SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("ShardedFilespec").Input("basename: string").Input("num_shards: int32")
                  .Output("filename: string").SetShapeFn(ScalarShape));

  // tf.io.decode_csv: each record string becomes one value per column, of the column's
  // record_default dtype; an empty default makes the column required.
  RegisterCoreOp(r, OpDefBuilder("DecodeCSV").Input("records: string").Input("record_defaults: OUT_TYPE")
                  .Output("output: OUT_TYPE").Attr("OUT_TYPE: list(type) >= 1")
                  .Attr("field_delim: string = \",\"").Attr("use_quote_delim: bool = true")
                  .Attr("na_value: string = \"\"").SetShapeFn(DecodeCsvShape));
}

}  // namespace tessera
