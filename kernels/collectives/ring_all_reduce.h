// RingAllReduce: one member's part of a ring all-reduce, talking to its neighbours only
// through a Rendezvous, so the members may be devices of this process or of others.
//
// The tensor is cut into `size` chunks. In the scatter-reduce phase (size-1 steps) each
// member sends one chunk to the next member and reduces the chunk it receives from the
// previous one into its own; afterwards member r holds the full reduction of chunk r+1.
// In the allgather phase (size-1 steps) the reduced chunks travel once more round the
// ring. Each member thus sends and receives 2(size-1)/size of the tensor. Every chunk is
// further cut into pieces that move through the steps independently, so reducing one
// piece overlaps the transfer of the next.
//
//   RingAllReduce::Params p{.rank = 1, .size = 4, .device = ..., .prev_device = ...};
//   RingAllReduce::Start(p, rendezvous, input, output, [](const Status& s) { ... });
//
// Every member of one reduction must use the same `name`, size, dtype and element count.
// Start returns at once; `done` is called once, on some thread, when this member's output
// is complete or the reduction failed (a rendezvous abort, a member with another size).
// Any number of reductions may run at once, from any threads, as long as their names differ.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "graph/tensor.h"
#include "kernels/rendezvous.h"
#include "kernels/thread_pool.h"

namespace tessera {

enum class ReduceOp { kSum, kMean, kMax, kMin };

// "sum", "mean", "max", "min"; InvalidArgument otherwise.
StatusOr<ReduceOp> ParseReduceOp(std::string_view name);

class RingAllReduce {
 public:
  struct Params {
    int rank = 0;
    int size = 1;
    std::string device;       // this member's device, the source of what it sends
    uint64_t incarnation = 0;
    std::string prev_device;  // the member it receives from
    uint64_t prev_incarnation = 0;
    std::string next_device;  // the member it sends to
    std::string name;         // the reduction's name in rendezvous keys, same on every member
    ReduceOp op = ReduceOp::kSum;
    bool wire_float16 = false;  // send float16: half the bytes, float16 precision
    // Large pieces are reduced on this pool rather than on the thread that delivered them.
    ThreadPool* pool = nullptr;
  };
  using DoneCallback = std::function<void(const Status&)>;

  // `input` and `output` are flat tensors of one dtype (float32, float64 or int32) and
  // element count; they may share a buffer (an in-place reduction). Both must stay alive
  // until `done`.
  static void Start(const Params& params, Rendezvous* rendezvous, const Tensor& input,
                    const Tensor& output, DoneCallback done);
};

}  // namespace tessera
