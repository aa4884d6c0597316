// GlooAllReduce: one member's part of an all-reduce group run by Gloo's ring over TCP
// (Debian's libgloo) instead of the engine's own ring (ring_all_reduce.h). Between
// machines Gloo's ring moves the bytes with less CPU a byte than the rendezvous does, so
// a group whose members span hosts runs here (collective_rings.h decides).
//
// The members find each other through a Gloo rendezvous store served by the step's
// Rendezvous, so no service beyond the cluster's own is needed: what a member publishes
// travels to the other members as a tensor. Gloo names each key after the rank that sets
// it ("rank_<r>" and "<r>"), which is how a member knows whom to receive a key from; any
// other key is refused. A member binds to the address its machine sends from toward the
// next member, whatever its own name resolves to. The connections are made on the first
// Start and kept; a failed reduction drops them, and a later Start makes them anew (a
// member whose reduction had not failed drops its own when the next one fails against the
// new ones: the group heals within a step or two).
//
// Gloo's connections carry no authentication and no encryption: the master does not pick
// Gloo by itself for a cluster that speaks TLS. Before each reduction the members agree on
// its dtype and element count, so that members that differ fail with InvalidArgument rather
// than corrupt Gloo's stream.
//
//   GlooAllReduce::Params p{.rank = 1, .size = 3, .devices = {...}, .hosts = {...}, ...};
//   GlooAllReduce member(p);
//   member.Start(rendezvous, step_id, input, output, [](const Status& s) { ... });
//
// Reductions of one member run one after another, each on the member's own thread (Gloo's
// calls block); Start may be called from any thread, again before an earlier one is done.
// Every member of one reduction must Start with the same step_id; members that start
// concurrent steps in different orders wait out their timeout. The destructor waits for
// the reductions already started.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/tensor.h"
#include "kernels/collectives/ring_all_reduce.h"
#include "kernels/rendezvous.h"

namespace tessera {

class GlooAllReduce {
 public:
  struct Params {
    int rank = 0;
    int size = 1;
    std::vector<std::string> devices;     // every member's device, by rank
    std::vector<uint64_t> incarnations;   // and its incarnation
    std::vector<std::string> hosts;       // and its host's name or address ("": this machine)
    std::string name;                     // the reduction's name in rendezvous keys, same on every member
    ReduceOp op = ReduceOp::kSum;
    bool wire_float16 = false;            // reduce and send float16: half the bytes
    // How long a reduction (or making the connections) waits for a member.
    std::chrono::milliseconds timeout{60000};
  };
  using DoneCallback = std::function<void(const Status&)>;

  // False where the build found no Gloo: Start then fails with Unimplemented.
  static bool Available();

  explicit GlooAllReduce(Params params);
  ~GlooAllReduce();
  GlooAllReduce(const GlooAllReduce&) = delete;
  GlooAllReduce& operator=(const GlooAllReduce&) = delete;

  // `input` and `output` are flat tensors of one dtype (float32, float64 or int32) and
  // element count, alive until `done`; they may share a buffer. `rendezvous` (the step's)
  // must outlive `done`.
  void Start(Rendezvous* rendezvous, int64_t step_id, const Tensor& input, const Tensor& output, DoneCallback done);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
