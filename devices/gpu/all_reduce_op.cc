// AllReduce on GPUs: the members of a group, GPUs of this process, meet (collective_meeting.h)
// and the last to arrive enqueues the whole reduction on every member's streams; no member
// holds a thread while it waits, and no value goes through the host.
//
// Members on distinct physical GPUs reduce with NCCL when it can be loaded. Logical GPUs of
// one physical GPU (NCCL refuses two ranks on one GPU), or GPUs without NCCL, run the
// engine's ring (ring_schedule.h): each reduce step a kernel on the member's compute stream
// that reads its predecessor's chunk in place, each gather step a device-to-device copy on
// its copy stream, ordered by events; the float16 wire rounds what a step reads, as the CPU
// ring's float16 messages do. Both end by making each member's compute stream wait for the
// last reads of its buffers, so memory the executor frees after the kernel is reused safely.
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <set>
#include <type_traits>

#include "devices/gpu/gpu_op_kernel.h"
#include "devices/gpu/launch.h"
#include "kernels/collectives/collective_meeting.h"
#include "kernels/collectives/ring_all_reduce.h"
#include "kernels/collectives/ring_schedule.h"
#ifdef TESSERA_HAVE_NCCL
#include "devices/gpu/nccl_library.h"
#endif

namespace tessera::gpu {
namespace {

// What the group agrees on (AssignRingPlaces checked it).
struct Reduction {
  ReduceFn fn = ReduceFn::kSum;
  bool wire_float16 = false;
  int size = 1;
};

struct Member {
  int rank = 0;
  OpKernelContext* ctx = nullptr;  // valid until `finish` runs
  const GpuDeviceContext* gpu = nullptr;
  Reduction reduction;
  Tensor input;   // flat
  Tensor output;  // flat; may share the input's buffer
  std::function<void(const Status&)> finish;
};

std::string Describe(const Member& m) {
  return StrCat("member ", m.rank, " ('", m.ctx->op_kernel().name(), "' on ", m.ctx->device()->name(), ")");
}

// Events for the ring's steps, destroyed when the enqueueing is over (CUDA frees an event's
// resources once the work it marks is done).
class Events {
 public:
  ~Events() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  // A new event recorded on `stream` of the current GPU.
  StatusOr<cudaEvent_t> Record(cudaStream_t stream) {
    cudaEvent_t e = nullptr;
    RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate"));
    events_.push_back(e);
    RETURN_IF_ERROR(CudaStatus(cudaEventRecord(e, stream), "cudaEventRecord"));
    return e;
  }

 private:
  std::vector<cudaEvent_t> events_;
};

// Members on distinct physical GPUs read each other's memory as peers.
Status EnablePeerAccess(const std::vector<Member>& members) {
  static std::mutex mu;
  static std::set<std::pair<int, int>> enabled;
  std::lock_guard<std::mutex> lock(mu);
  for (size_t r = 0; r < members.size(); ++r) {
    const int self = members[r].gpu->ordinal();
    const int peer = members[(r + members.size() - 1) % members.size()].gpu->ordinal();
    if (self == peer || enabled.count({self, peer}) > 0) continue;
    int can = 0;
    RETURN_IF_ERROR(CudaStatus(cudaDeviceCanAccessPeer(&can, self, peer), "cudaDeviceCanAccessPeer"));
    if (can == 0) {
      return errors::FailedPrecondition("GPU ", self, " cannot read GPU ", peer,
                                        "'s memory (no peer access) and NCCL is not available for the all-reduce");
    }
    RETURN_IF_ERROR(members[r].gpu->Activate());
    cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
    if (err == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();
    } else {
      RETURN_IF_ERROR(CudaStatus(err, "cudaDeviceEnablePeerAccess"));
    }
    enabled.insert({self, peer});
  }
  return Status::OK();
}

template <typename T>
Status EnqueueRing(std::vector<Member>& members) {
  const Reduction& red = members[0].reduction;
  const int size = red.size;
  const int64_t n = members[0].input.NumElements();
  const int steps = RingStepCount(size);
  Events events;
  // done[m][t + 1]: member m's step t is done; t = -1 is its input ready.
  std::vector<std::vector<cudaEvent_t>> done(size, std::vector<cudaEvent_t>(steps + 1));
  for (int m = 0; m < size; ++m) {
    RETURN_IF_ERROR(members[m].gpu->Activate());
    ASSIGN_OR_RETURN(done[m][0], events.Record(members[m].gpu->compute_stream()));
  }
  for (const RingStep& s : RingSchedule(size, n)) {
    const Member& self = members[s.member];
    const Member& from = members[s.from];
    const GpuDeviceContext& gpu = *self.gpu;
    RETURN_IF_ERROR(gpu.Activate());
    cudaStream_t stream = s.reduce ? gpu.compute_stream() : gpu.device_to_device_stream();
    RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(stream, done[s.member][s.step], 0), "cudaStreamWaitEvent"));
    RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(stream, done[s.from][s.step], 0), "cudaStreamWaitEvent"));
    const T* src = (s.from_input ? from.input : from.output).data<T>() + s.begin;
    T* dst = self.output.data<T>() + s.begin;
    const int64_t count = s.end - s.begin;
    if (s.reduce) {
      RETURN_IF_ERROR(CudaStatus(AllReduceStep<T>(red.fn, self.input.data<T>() + s.begin, src, dst, count,
                                                  red.wire_float16, s.finish, size, stream),
                                 "all-reduce step"));
    } else if (count > 0) {
      RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(dst, src, count * sizeof(T), cudaMemcpyDeviceToDevice, stream),
                                 "all-reduce copy"));
    }
    ASSIGN_OR_RETURN(done[s.member][s.step + 1], events.Record(stream));
  }
  // What follows on a member's compute stream may reuse its buffers: after its own last step
  // (a copy) and its successor's, the last to read them.
  for (int m = 0; m < size; ++m) {
    cudaStream_t stream = members[m].gpu->compute_stream();
    RETURN_IF_ERROR(members[m].gpu->Activate());
    RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(stream, done[m][steps], 0), "cudaStreamWaitEvent"));
    RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(stream, done[(m + 1) % size][steps], 0), "cudaStreamWaitEvent"));
  }
  return Status::OK();
}

#ifdef TESSERA_HAVE_NCCL
Status NcclStatus(const NcclLibrary& nccl, ncclResult_t result, std::string_view what) {
  if (result == ncclSuccess) return Status::OK();
  return errors::Internal(what, " failed: ", nccl.error_string(result));
}

// One communicator per GPU of a set of distinct GPUs, made on first use. An all-reduce is
// enqueued on all of them by one thread at a time: NCCL needs every rank to see a
// communicator's operations in the same order.
struct Communicators {
  std::mutex mu;
  std::vector<ncclComm_t> comms;
};

StatusOr<Communicators*> CommunicatorsFor(const NcclLibrary& nccl, const std::vector<int>& ordinals) {
  static std::mutex mu;
  static auto* all = new std::map<std::vector<int>, std::unique_ptr<Communicators>>;  // lives as long as NCCL
  std::lock_guard<std::mutex> lock(mu);
  auto it = all->find(ordinals);
  if (it != all->end()) return it->second.get();
  auto c = std::make_unique<Communicators>();
  c->comms.resize(ordinals.size());
  RETURN_IF_ERROR(NcclStatus(nccl, nccl.comm_init_all(c->comms.data(), static_cast<int>(ordinals.size()), ordinals.data()),
                             "ncclCommInitAll"));
  return all->emplace(ordinals, std::move(c)).first->second.get();
}

template <typename T>
Status EnqueueNccl(const NcclLibrary& nccl, std::vector<Member>& members) {
  const Reduction& red = members[0].reduction;
  const int64_t n = members[0].input.NumElements();
  std::vector<int> ordinals;
  for (const Member& m : members) ordinals.push_back(m.gpu->ordinal());
  ASSIGN_OR_RETURN(Communicators * comms, CommunicatorsFor(nccl, ordinals));
  // On the float16 wire each member sends a float16 copy, NCCL sums float16 values, and the
  // result comes back through a cast before the mean's division.
  std::vector<Tensor> wire(members.size());
  if (red.wire_float16) {
    for (size_t r = 0; r < members.size(); ++r) {
      Member& m = members[r];
      RETURN_IF_ERROR(m.gpu->Activate());
      RETURN_IF_ERROR(m.ctx->allocate_temp(DataType::kHalf, TensorShape({n}), &wire[r]));
      RETURN_IF_ERROR(CudaStatus(Cast<T, HalfBits>(m.input.data<T>(), static_cast<HalfBits*>(wire[r].raw_data()), n,
                                                   m.gpu->compute_stream()),
                                 "casting to float16"));
    }
  }
  const ncclDataType_t type = red.wire_float16             ? ncclFloat16
                              : std::is_same_v<T, double> ? ncclFloat64
                                                          : ncclFloat32;
  const ncclRedOp_t op = red.fn == ReduceFn::kMax ? ncclMax : red.fn == ReduceFn::kMin ? ncclMin : ncclSum;
  {
    std::lock_guard<std::mutex> lock(comms->mu);
    RETURN_IF_ERROR(NcclStatus(nccl, nccl.group_start(), "ncclGroupStart"));
    Status first;
    for (size_t r = 0; r < members.size(); ++r) {
      Member& m = members[r];
      const void* src = red.wire_float16 ? wire[r].raw_data() : m.input.raw_data();
      void* dst = red.wire_float16 ? wire[r].raw_data() : m.output.raw_data();
      Status s = NcclStatus(nccl, nccl.all_reduce(src, dst, n, type, op, comms->comms[r], m.gpu->compute_stream()),
                            "ncclAllReduce");
      if (first.ok()) first = s;
    }
    RETURN_IF_ERROR(NcclStatus(nccl, nccl.group_end(), "ncclGroupEnd"));
    RETURN_IF_ERROR(first);
  }
  for (size_t r = 0; r < members.size(); ++r) {
    Member& m = members[r];
    RETURN_IF_ERROR(m.gpu->Activate());
    cudaStream_t stream = m.gpu->compute_stream();
    T* out = m.output.data<T>();
    if (red.wire_float16) {
      RETURN_IF_ERROR(CudaStatus(Cast<HalfBits, T>(static_cast<const HalfBits*>(wire[r].raw_data()), out, n, stream),
                                 "casting from float16"));
    }
    if (red.fn == ReduceFn::kMean || red.wire_float16) {
      RETURN_IF_ERROR(CudaStatus(
          AllReduceStep<T>(red.fn, out, nullptr, out, n, red.wire_float16, /*finish=*/true, red.size, stream),
          "finishing the all-reduce"));
    }
  }
  return Status::OK();
}
#endif

template <typename T>
Status Enqueue(std::vector<Member>& members) {
  std::set<int> ordinals;
  for (const Member& m : members) ordinals.insert(m.gpu->ordinal());
#ifdef TESSERA_HAVE_NCCL
  if (ordinals.size() == members.size()) {
    StatusOr<const NcclLibrary*> nccl = LoadNccl();
    if (nccl.ok()) return EnqueueNccl<T>(**nccl, members);
  }
#endif
  if (ordinals.size() > 1) RETURN_IF_ERROR(EnablePeerAccess(members));
  return EnqueueRing<T>(members);
}

void RunAll(std::vector<Member>& members) {
  Status s;
  const Member& first = members[0];
  for (const Member& m : members) {
    if (m.input.dtype() != first.input.dtype() || m.input.NumElements() != first.input.NumElements()) {
      s = errors::InvalidArgument("All-reduce members disagree: ", Describe(first), " has ",
                                  first.input.NumElements(), " ", DataTypeName(first.input.dtype()),
                                  " elements, ", Describe(m), " has ", m.input.NumElements(), " ",
                                  DataTypeName(m.input.dtype()), "; every member needs the same dtype and shape");
      break;
    }
  }
  if (s.ok()) s = first.input.dtype() == DataType::kDouble ? Enqueue<double>(members) : Enqueue<float>(members);
  for (Member& m : members) m.finish(s);
}

void Abort(Member& member, const Status& s) { member.finish(s); }

CollectiveMeeting<Member>& Meeting() {
  static auto* meeting = new CollectiveMeeting<Member>(RunAll, Abort);
  return *meeting;
}

class AllReduceOp : public AsyncOpKernel {
 public:
  explicit AllReduceOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    std::string reduction;
    int64_t group_key = 0, group_size = 1, instance_key = 0, rank = 0;
    Status s = c->GetAttr("reduction", &reduction);
    if (s.ok()) s = c->GetAttr("group_key", &group_key);
    if (s.ok()) s = c->GetAttr("group_size", &group_size);
    if (s.ok()) s = c->GetAttr("instance_key", &instance_key);
    if (s.ok()) s = c->GetAttr("wire_float16", &reduction_.wire_float16);
    if (s.ok()) {
      StatusOr<ReduceOp> op = ParseReduceOp(reduction);
      s = op.status();
      if (op.ok()) {
        reduction_.fn = *op == ReduceOp::kMean  ? ReduceFn::kMean
                        : *op == ReduceOp::kMax ? ReduceFn::kMax
                        : *op == ReduceOp::kMin ? ReduceFn::kMin
                                                : ReduceFn::kSum;
      }
    }
    if (s.ok() && group_size > 1 && !c->GetAttr("_ring_rank", &rank).ok()) {
      s = errors::FailedPrecondition("AllReduce ", name(),
                                     " has no rank in its group; a Session assigns the members of its group their "
                                     "ranks when it runs them");
    }
    reduction_.size = static_cast<int>(group_size);
    rank_ = static_cast<int>(rank);
    key_ = StrCat("AllReduce/", group_key, "/", instance_key);
    if (!s.ok()) c->SetStatus(s);
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const GpuDeviceContext& gpu = *GpuContextOf(ctx->device_context());
    OP_REQUIRES_OK_ASYNC(ctx, gpu.Activate(), done);
    Member m;
    m.rank = rank_;
    m.ctx = ctx;
    m.gpu = &gpu;
    m.reduction = reduction_;
    OP_REQUIRES_OK_ASYNC(ctx, Pack(ctx, gpu, &m.input, &m.output), done);
    if (reduction_.size == 1) {
      Unpack(ctx, m.output);
      done();
      return;
    }
    m.finish = [this, ctx, output = m.output, done](const Status& s) {
      if (s.ok()) Unpack(ctx, output);
      ctx->SetStatus(s);
      done();
    };
    const FrameAndIter& frame = ctx->frame_iter();
    const std::string key = StrCat(key_, ";step ", ctx->step_id(), ";frame ", frame.frame_id, ":", frame.iter_id);
    OP_REQUIRES_OK_ASYNC(ctx, Meeting().Join(key, reduction_.size, rank_, std::move(m), ctx->cancellation_manager()),
                         done);
  }

 private:
  // One input reduces in place when its buffer is free to take, else into a new output;
  // several are packed into one buffer (a bucket) on the compute stream.
  Status Pack(OpKernelContext* ctx, const GpuDeviceContext& gpu, Tensor* input, Tensor* output) {
    if (num_inputs() == 1) {
      const Tensor& in = ctx->input(0);
      Tensor* out = nullptr;
      RETURN_IF_ERROR(ctx->forward_input_or_allocate_output(0, 0, in.shape(), &out));
      ASSIGN_OR_RETURN(*input, in.Reshaped(TensorShape({in.NumElements()})));
      ASSIGN_OR_RETURN(*output, out->Reshaped(TensorShape({in.NumElements()})));
      if (reduction_.size == 1 && out->raw_data() != in.raw_data()) {
        RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(out->raw_data(), in.raw_data(), in.TotalBytes(),
                                                   cudaMemcpyDeviceToDevice, gpu.compute_stream()),
                                   "AllReduce"));
      }
      return Status::OK();
    }
    int64_t total = 0;
    for (int i = 0; i < num_inputs(); ++i) total += ctx->input(i).NumElements();
    RETURN_IF_ERROR(ctx->allocate_temp(input_type(0), TensorShape({total}), output));
    auto* dst = static_cast<std::byte*>(output->raw_data());
    for (int i = 0; i < num_inputs(); ++i) {
      const Tensor& in = ctx->input(i);
      RETURN_IF_ERROR(CudaStatus(
          cudaMemcpyAsync(dst, in.raw_data(), in.TotalBytes(), cudaMemcpyDeviceToDevice, gpu.compute_stream()),
          "packing an AllReduce bucket"));
      dst += in.TotalBytes();
    }
    *input = *output;
    return Status::OK();
  }

  void Unpack(OpKernelContext* ctx, const Tensor& output) {
    if (num_inputs() == 1) return;  // the output was allocated in place
    int64_t offset = 0;
    for (int i = 0; i < num_inputs(); ++i) {
      const Tensor& in = ctx->input(i);
      ctx->set_output(i, *output.Slice(offset, offset + in.NumElements()).Reshaped(in.shape()));
      offset += in.NumElements();
    }
  }

  Reduction reduction_;
  int rank_ = 0;
  std::string key_;
};

}  // namespace

void RegisterAllReduceKernels(KernelRegistry& r) {
  r.Register<AllReduceOp>(
      KernelDefBuilder("AllReduce").Device(kDeviceGpu).TypeConstraint("T", {DataType::kFloat, DataType::kDouble}));
}

}  // namespace tessera::gpu
