// Rendezvous: where one step's tensors meet between devices. A producer Sends a tensor
// under a key; the consumer asks for it with RecvAsync and is called back when it arrives
// (or at once if it already has). Send/Recv kernels and the ring all-reduce talk to other
// devices only through this interface, so the same kernels work whether the peer is in
// this process (runtime/'s IntraProcessRendezvous) or, later, in another one.
//
//   std::string key = Rendezvous::CreateKey("/job:localhost/replica:0/task:0/device:CPU:0", 7,
//                                           "/job:localhost/replica:0/task:0/device:CPU:1", "x:0");
//   rendezvous->Send(key, t);
//   rendezvous->RecvAsync(key, [](const Status& s, const Tensor& t) { ... });
//
// Each end says where its tensor lives (Args): when the sender's memory and the receiver's
// differ, the rendezvous copies between them (copy_tensor.h) before the receiver is called;
// host memory to host memory hands the buffer over. Each key carries one tensor per step.
// A dead value (a Switch's untaken branch) travels as an empty Tensor(), never copied.
// Implementations are thread-safe: Send, RecvAsync and StartAbort may be called
// concurrently from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "graph/platform/status.h"
#include "graph/tensor.h"
#include "kernels/device_base.h"

namespace tessera {

class Rendezvous {
 public:
  // `status` is not OK when the step was aborted; the tensor is then empty.
  using DoneCallback = std::function<void(const Status& status, const Tensor& value)>;

  // Where a sent tensor is, or where a received one is wanted.
  struct Args {
    DeviceBase* device = nullptr;  // nullptr: host memory
    AllocatorAttributes alloc_attrs;
    // Where the receiver would like the value: a transport that copies it anyway may write
    // it into this host tensor (when dtype and shape match) and hand back `into` itself.
    // The receiver must not touch it until `done`.
    Tensor into;
  };

  virtual ~Rendezvous() = default;

  // Hands `value` to the receiver of `key`; the error the step was aborted with, if it was.
  virtual Status Send(std::string_view key, const Args& args, const Tensor& value) = 0;
  // Calls `done` exactly once: with the tensor sent under `key`, in the memory `args` asks
  // for, or with the abort status. `done` may run on this thread (the value is already
  // here), on the sender's, or on the thread that finished a copy.
  virtual void RecvAsync(std::string_view key, const Args& args, DoneCallback done) = 0;
  // Both ends in host memory.
  Status Send(std::string_view key, const Tensor& value) { return Send(key, Args{}, value); }
  void RecvAsync(std::string_view key, DoneCallback done) { RecvAsync(key, Args{}, std::move(done)); }
  // Fails every pending and future Recv and Send of the step with `status` (not OK).
  virtual void StartAbort(const Status& status) = 0;

  // "src_device;src_incarnation;dst_device;tensor_name;frame_and_iter", the key form
  // TensorFlow uses; the incarnation (in hex) tells a restarted device from its earlier self.
  static std::string CreateKey(std::string_view src_device, uint64_t src_incarnation,
                               std::string_view dst_device, std::string_view tensor_name,
                               std::string_view frame_and_iter = "0:0");
};

}  // namespace tessera
