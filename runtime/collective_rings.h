// AssignRingPlaces: lowers each AllReduce group of a placed graph onto a ring. The members
// of a group (same group_key and instance_key) are ordered by device, and each member
// learns its rank and its neighbours' devices and incarnations through internal attrs
// (_ring_rank, _ring_prev, _ring_next, _ring_incarnation, _ring_prev_incarnation), which
// its kernel reads to run the ring all-reduce over the rendezvous. A CPU member learns
// besides every member's device, incarnation and host (_ring_members,
// _ring_member_incarnations, _ring_hosts, comma-separated) and the session's operation
// timeout (_ring_timeout_ms, 0: none), which it needs when its communication_hint asks for
// Gloo (kernels/collectives/gloo_all_reduce.h).
//
//   RETURN_IF_ERROR(AssignRingPlaces(&node_defs, partition_options));
//
// InvalidArgument, naming the members, for a group with another number of members than
// its group_size, two members on one device, members on devices of two types or on GPUs of
// two tasks, or members that disagree on dtype, input count, reduction, wire format or
// communication hint. Pure function of its inputs; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/graph_spec.h"
#include "runtime/partition.h"

namespace tessera {

// `nodes` are placed NodeDefs: `device` holds the full assigned device name. `options`
// give each device's incarnation and host.
Status AssignRingPlaces(const std::vector<NodeSpec*>& nodes, const PartitionOptions& options);

}  // namespace tessera
