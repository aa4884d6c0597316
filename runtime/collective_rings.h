// AssignRingPlaces: lowers each AllReduce group of a placed graph onto a ring. The members
// of a group (same group_key and instance_key) are ordered by device, and each member
// learns its rank and its neighbours' devices and incarnations through internal attrs
// (_ring_rank, _ring_prev, _ring_next, _ring_incarnation, _ring_prev_incarnation), which
// its kernel reads to run the ring all-reduce over the rendezvous. A CPU member learns
// besides every member's device, incarnation and host (_ring_members,
// _ring_member_incarnations, _ring_hosts, comma-separated) and whether the members span
// machines (_ring_between_hosts), whether the cluster speaks TLS (_ring_tls, when Gloo's
// plain connections are not taken by default) and the session's operation timeout
// (_ring_timeout_ms, 0: none): with communication_hint "auto" such a group
// runs on Gloo (kernels/collectives/gloo_all_reduce.h), which was the faster between
// machines; on one machine the engine's ring, with its same-host socket.
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
// give each device's incarnation and host, and whether the cluster speaks TLS.
Status AssignRingPlaces(const std::vector<NodeSpec*>& nodes, const PartitionOptions& options);

}  // namespace tessera
