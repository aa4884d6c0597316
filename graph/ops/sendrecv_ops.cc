// Schemas of runtime-internal ops: feeds and fetches, and the two ends of a cross-device edge.
#include "graph/ops/core_ops.h"
#include "graph/shape_inference.h"

namespace tessera {

void RegisterSendrecvOps(OpRegistry& r) {
  // Runtime-internal: a session's feeds and fetches become _Arg and _Retval nodes.
  RegisterCoreOp(r, OpDefBuilder("_Arg").Output("output: T").Attr("T: type").Attr("index: int >= 0")
                  .Attr("shape: shape = unknown").SetShapeFn(ShapeFromAttr));
  RegisterCoreOp(r, OpDefBuilder("_Retval").Input("input: T").Attr("T: type").Attr("index: int >= 0"));

  // Runtime-internal: partitioning turns every cross-device edge into a _Send on the
  // producer's device and a _Recv on the consumer's, meeting in the step's rendezvous; the
  // _Host variants are for an end whose tensor its device keeps in host memory.
  for (const char* op : {"_Send", "_HostSend"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Input("tensor: T").Attr("T: type").Attr("tensor_name: string")
                    .Attr("send_device: string").Attr("send_device_incarnation: int")
                    .Attr("recv_device: string").Attr("client_terminated: bool = false")
                    .SetIsStateful());
  }
  for (const char* op : {"_Recv", "_HostRecv"}) {
    RegisterCoreOp(r, OpDefBuilder(op).Output("tensor: tensor_type").Attr("tensor_type: type")
                    .Attr("tensor_name: string").Attr("send_device: string")
                    .Attr("send_device_incarnation: int").Attr("recv_device: string")
                    .Attr("client_terminated: bool = false").Attr("shape: shape = unknown")
                    .SetIsStateful().SetShapeFn(ShapeFromAttr));
  }
}

}  // namespace tessera
