// What a task decodes from the requests other tasks send it, checked before anything runs
// (shared by the server's handlers and the fuzz target that feeds them hostile bytes), and
// devices between RemoteDevice and the wire. Internal to distributed/. Pure functions;
// thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distributed/protos/worker_service.pb.h"
#include "distributed/remote_device.h"
#include "graph/graph.h"
#include "graph/tensor.h"

namespace tessera {

// Each partition's device and graph: the one place a worker makes a Graph of what its master
// sent. InvalidArgument naming the device for a graph that does not parse or validate, or a
// device named twice.
StatusOr<std::vector<std::pair<std::string, std::unique_ptr<Graph>>>> DecodePartitions(
    const rpc::RegisterGraphRequest& request);

// The step's arguments by _Arg index. InvalidArgument for a negative index, an index given
// twice, or a tensor that does not decode.
StatusOr<std::map<int, Tensor>> DecodeArgs(const rpc::RunGraphRequest& request);

RemoteDevice DecodeDevice(const rpc::DeviceAttributes& attributes);
void EncodeDevice(const RemoteDevice& device, rpc::DeviceAttributes* out);

}  // namespace tessera
