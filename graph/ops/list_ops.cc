// Schemas of the TensorList ops: TF2's TensorArrays and while-loop accumulators, a list of
// tensors carried in a variant scalar (kernels/util/tensor_list.h).
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {

void RegisterListOps(OpRegistry& r) {
  const char* kShapeType = "shape_type: {int32, int64}";
  RegisterCoreOp(r, OpDefBuilder("EmptyTensorList").Input("element_shape: shape_type").Input("max_num_elements: int32")
                  .Output("handle: variant").Attr("element_dtype: type").Attr(kShapeType).SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("TensorListReserve").Input("element_shape: shape_type").Input("num_elements: int32")
                  .Output("handle: variant").Attr("element_dtype: type").Attr(kShapeType).SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("TensorListFromTensor").Input("tensor: element_dtype").Input("element_shape: shape_type")
                  .Output("output_handle: variant").Attr("element_dtype: type").Attr(kShapeType)
                  .SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("TensorListSetItem").Input("input_handle: variant").Input("index: int32")
                  .Input("item: element_dtype").Output("output_handle: variant").Attr("element_dtype: type")
                  .Attr("resize_if_index_out_of_bounds: bool = false").SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("TensorListGetItem").Input("input_handle: variant").Input("index: int32")
                  .Input("element_shape: int32").Output("item: element_dtype").Attr("element_dtype: type")
                  .SetShapeFn(UnknownShape));
  RegisterCoreOp(r, OpDefBuilder("TensorListStack").Input("input_handle: variant").Input("element_shape: int32")
                  .Output("tensor: element_dtype").Attr("element_dtype: type").Attr("num_elements: int = -1")
                  .SetShapeFn(UnknownShape));
  RegisterCoreOp(r, OpDefBuilder("TensorListLength").Input("input_handle: variant").Output("length: int32")
                  .SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("TensorListElementShape").Input("input_handle: variant")
                  .Output("element_shape: shape_type").Attr(kShapeType).SetShapeFn(UnknownShape));
  RegisterCoreOp(r, OpDefBuilder("TensorListPushBack").Input("input_handle: variant").Input("tensor: element_dtype")
                  .Output("output_handle: variant").Attr("element_dtype: type").SetShapeFn(ScalarShape));
  RegisterCoreOp(r, OpDefBuilder("TensorListPopBack").Input("input_handle: variant").Input("element_shape: int32")
                  .Output("output_handle: variant").Output("tensor: element_dtype").Attr("element_dtype: type")
                  .SetShapeFn(UnknownShape));
  RegisterCoreOp(r, OpDefBuilder("TensorListConcatV2").Input("input_handle: variant").Input("element_shape: shape_type")
                  .Input("leading_dims: int64").Output("tensor: element_dtype").Output("lengths: int64")
                  .Attr("element_dtype: type").Attr(kShapeType).SetShapeFn(UnknownShape));
}

}  // namespace tessera
