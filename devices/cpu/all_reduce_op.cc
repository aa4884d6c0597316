// AllReduce: this device's member of a collective group, run as the engine's ring
// all-reduce over the step's rendezvous, or by Gloo where the graph asks for it
// (communication_hint "gloo"). Several inputs are packed
// into one buffer and reduced in one pass (a fused bucket); their outputs are views of it.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "devices/cpu/cpu_kernels.h"
#include "graph/platform/str_split.h"
#include "kernels/collectives/gloo_all_reduce.h"
#include "kernels/collectives/ring_all_reduce.h"

namespace tessera::cpu {
namespace {

class AllReduceOp : public AsyncOpKernel {
 public:
  explicit AllReduceOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    std::string reduction;
    int64_t group_key = 0, group_size = 1, instance_key = 0;
    Status s = c->GetAttr("reduction", &reduction);
    if (s.ok()) s = c->GetAttr("group_key", &group_key);
    if (s.ok()) s = c->GetAttr("group_size", &group_size);
    if (s.ok()) s = c->GetAttr("instance_key", &instance_key);
    if (s.ok()) s = c->GetAttr("wire_float16", &ring_.wire_float16);
    if (s.ok()) {
      StatusOr<ReduceOp> op = ParseReduceOp(reduction);
      s = op.status();
      if (op.ok()) ring_.op = *op;
    }
    if (s.ok() && ring_.wire_float16 && input_type(0) == DataType::kInt32) {
      s = errors::InvalidArgument("wire_float16 applies to floating-point all-reduces, not int32");
    }
    ring_.size = static_cast<int>(group_size);
    ring_.device = c->device()->name();
    ring_.next_device = ring_.prev_device = ring_.device;
    ring_.name = StrCat("AllReduce/", group_key, "/", instance_key);
    if (s.ok() && group_size > 1) s = ReadRingPlace(c);
    if (s.ok() && group_size > 1) s = ChooseGloo(c);
    if (!s.ok()) c->SetStatus(s);
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    OP_REQUIRES_ASYNC(ctx, ring_.size == 1 || ctx->rendezvous() != nullptr,
                      errors::Internal("AllReduce needs the step's rendezvous; run it through a Session"), done);
    // A group of one (a single tower) reduces to its own values: they pass through as they
    // are, not copied into a fused buffer and back (46 us a step for the demo CNN's gradients).
    if (ring_.size == 1) {
      for (int i = 0; i < num_inputs(); ++i) ctx->set_output(i, ctx->input(i));
      done();
      return;
    }
    RingAllReduce::Params params = ring_;
    params.pool = ctx->intra_op_pool();
    auto start = [this, ctx, params](const Tensor& in, const Tensor& out, RingAllReduce::DoneCallback reduced) {
      if (gloo_) {
        gloo_->Start(ctx->rendezvous(), ctx->step_id(), in, out, std::move(reduced));
      } else {
        RingAllReduce::Start(params, ctx->rendezvous(), in, out, std::move(reduced));
      }
    };
    if (num_inputs() == 1) {
      const Tensor& in = ctx->input(0);
      Tensor* out = nullptr;
      OP_REQUIRES_OK_ASYNC(ctx, ctx->forward_input_or_allocate_output(0, 0, in.shape(), &out), done);
      Tensor flat_in = *in.Reshaped(TensorShape({in.NumElements()}));
      Tensor flat_out = *out->Reshaped(TensorShape({in.NumElements()}));
      start(flat_in, flat_out, [ctx, done = std::move(done)](const Status& st) {
        ctx->SetStatus(st);
        done();
      });
      return;
    }
    int64_t total = 0;
    for (int i = 0; i < num_inputs(); ++i) total += ctx->input(i).NumElements();
    Tensor fused;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_temp(input_type(0), TensorShape({total}), &fused), done);
    const size_t element = DataTypeSize(input_type(0));
    auto* dst = static_cast<std::byte*>(fused.raw_data());
    for (int i = 0; i < num_inputs(); ++i) {
      const Tensor& in = ctx->input(i);
      std::memcpy(dst, in.raw_data(), in.TotalBytes());
      dst += in.NumElements() * element;
    }
    start(fused, fused, [this, ctx, fused, done = std::move(done)](const Status& st) {
      if (st.ok()) {
        int64_t offset = 0;
        for (int i = 0; i < num_inputs(); ++i) {
          const TensorShape& shape = ctx->input(i).shape();
          int64_t n = ctx->input(i).NumElements();
          ctx->set_output(i, *fused.Slice(offset, offset + n).Reshaped(shape));
          offset += n;
        }
      }
      ctx->SetStatus(st);
      done();
    });
  }

 private:
  // The session's collective rewrite writes each member's neighbours into these attrs.
  Status ReadRingPlace(OpKernelConstruction* c) {
    int64_t rank = 0, incarnation = 0, prev_incarnation = 0;
    Status s = c->GetAttr("_ring_rank", &rank);
    if (s.ok()) s = c->GetAttr("_ring_prev", &ring_.prev_device);
    if (s.ok()) s = c->GetAttr("_ring_next", &ring_.next_device);
    if (s.ok()) s = c->GetAttr("_ring_incarnation", &incarnation);
    if (s.ok()) s = c->GetAttr("_ring_prev_incarnation", &prev_incarnation);
    if (!s.ok()) {
      return errors::FailedPrecondition("AllReduce ", name(),
                                        " has no place in a ring; a Session assigns the members of its "
                                        "group their places when it runs them (",
                                        s.message(), ")");
    }
    ring_.rank = static_cast<int>(rank);
    ring_.incarnation = static_cast<uint64_t>(incarnation);
    ring_.prev_incarnation = static_cast<uint64_t>(prev_incarnation);
    return Status::OK();
  }

  // Gloo runs the group when the graph asks for it: then the session wrote every member's
  // place (collective_rings.h). Its connections are plain TCP, which TLS does not cover.
  Status ChooseGloo(OpKernelConstruction* c) {
    std::string hint = "auto";
    Status s = c->GetAttr("communication_hint", &hint);
    if (!s.ok() || hint != "gloo") return s;
    GlooAllReduce::Params p;
    p.rank = ring_.rank;
    p.size = ring_.size;
    p.name = ring_.name;
    p.op = ring_.op;
    p.wire_float16 = ring_.wire_float16;
    std::string members, incarnations, hosts;
    int64_t timeout_ms = 0;
    s = c->GetAttr("_ring_timeout_ms", &timeout_ms);
    // The session's operation timeout bounds the wait for a member too (up to a day, past
    // which Gloo's deadlines would overflow).
    if (s.ok() && timeout_ms > 0) p.timeout = std::chrono::milliseconds(std::min<int64_t>(timeout_ms, 86400000));
    if (s.ok()) s = c->GetAttr("_ring_members", &members);
    if (s.ok()) s = c->GetAttr("_ring_member_incarnations", &incarnations);
    if (s.ok()) s = c->GetAttr("_ring_hosts", &hosts);
    if (!s.ok()) return s;
    for (std::string_view d : StrSplit(members, ',')) p.devices.emplace_back(d);
    for (std::string_view i : StrSplit(incarnations, ',')) {
      p.incarnations.push_back(std::strtoull(std::string(i).c_str(), nullptr, 10));
    }
    for (std::string_view h : StrSplit(hosts, ',')) p.hosts.emplace_back(h);
    if (static_cast<int>(p.devices.size()) != p.size || static_cast<int>(p.incarnations.size()) != p.size ||
        static_cast<int>(p.hosts.size()) != p.size) {
      return errors::InvalidArgument("AllReduce ", name(), " names ", p.devices.size(), " members for a group of ",
                                     p.size);
    }
    gloo_ = std::make_unique<GlooAllReduce>(std::move(p));
    return Status::OK();
  }

  RingAllReduce::Params ring_;
  std::unique_ptr<GlooAllReduce> gloo_;  // null: the engine's ring
};

}  // namespace

void RegisterAllReduceKernels(KernelRegistry& r) {
  r.Register<AllReduceOp>(KernelDefBuilder("AllReduce").Device(kDeviceCpu).TypeConstraint("T", {
      DataType::kFloat, DataType::kDouble, DataType::kInt32}));
}

}  // namespace tessera::cpu
