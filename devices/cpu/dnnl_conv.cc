#include "devices/cpu/dnnl_conv.h"

#include "devices/cpu/batch_parts.h"
#include "devices/cpu/onednn_threads.h"
#include "devices/cpu/pooling.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>

namespace tessera::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

// Never destroyed, like the primitive cache: kernels may still run while statics go away.
const dnnl::engine& Engine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

enum class Kind { kForward, kBackwardInput, kBackwardFilter };

// The primitive for one batch part, the layout it wants the filter (or its gradient) in,
// and the scratch memory it needs.
struct Primitive {
  dnnl::primitive primitive;
  memory::desc filter;   // as the primitive wants it
  memory::desc user_filter;  // [KH, KW, C, O]
  memory::desc scratch;
  // The input and output as a forward primitive wants them: NHWC, or oneDNN's blocked
  // layouts for a Winograd convolution, which the part then reorders into and out of.
  memory::desc src, dst;
};

// Everything a primitive depends on; the output size fixes the bottom and right padding.
using Key = std::tuple<Kind, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, bool, bool, bool, bool, int64_t, int64_t, bool>;

// What a forward primitive is besides its shapes: whether it adds a bias, the activation it
// applies, whether it is depthwise, and the layouts it reads and writes.
struct Fusion {
  bool bias = false;
  bool relu = false;
  bool relu6 = false;
  bool sum = false;  // adds to what the output holds, before the activation
  // A depthwise convolution's channel multiplier (oneDNN's grouped convolution, a group per
  // input channel); 0 for a full convolution.
  int64_t depthwise = 0;
  // The activations' layout: 0 for NHWC, else oneDNN's blocked nChw8c or nChw16c (of that
  // many channels a block).
  int64_t block = 0;
  // With a block, the input is NCHW instead: a first layer's few channels, which oneDNN's
  // blocked convolutions read in that layout alone.
  bool nchw_src = false;
};

Tag ActivationTag(int64_t block) { return block == 0 ? Tag::nhwc : block == 8 ? Tag::nChw8c : Tag::nChw16c; }

StatusOr<std::shared_ptr<const Primitive>> Build(Kind kind, const Geometry& g, int64_t n, int64_t o, Fusion fusion) {
  const memory::desc src({n, g.c, g.h, g.w}, kF32, fusion.nchw_src ? Tag::nchw : ActivationTag(fusion.block));
  const memory::desc dst({n, o, g.oh, g.ow}, kF32, ActivationTag(fusion.block));
  // Grouped weights [C, multiplier, 1, KH, KW] for a depthwise convolution; TensorFlow's
  // [KH, KW, C, multiplier] is oneDNN's hwigo.
  const memory::desc any_filter = fusion.depthwise > 0
                                      ? memory::desc({g.c, fusion.depthwise, 1, g.kh, g.kw}, kF32, Tag::any)
                                      : memory::desc({o, g.c, g.kh, g.kw}, kF32, Tag::any);
  const memory::dims strides = {g.sh, g.sw}, pad_l = {g.pad_top, g.pad_left},
                     pad_r = {g.pad_bottom(), g.pad_right()};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::primitive_attr forward_attr = attr;
  if (fusion.relu || fusion.relu6 || fusion.sum) {
    dnnl::post_ops post;
    if (fusion.sum) post.append_sum(1.f);
#if DNNL_VERSION_MAJOR >= 3
    if (fusion.relu6) post.append_eltwise(dnnl::algorithm::eltwise_clip, 0.f, 6.f);
    else if (fusion.relu) post.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
#else
    if (fusion.relu6) post.append_eltwise(1.f, dnnl::algorithm::eltwise_bounded_relu, 6.f, 0.f);
    else if (fusion.relu) post.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
#endif
    forward_attr.set_post_ops(post);
  }
  const memory::desc bias = fusion.bias ? memory::desc({o}, kF32, Tag::x) : memory::desc();
  auto p = std::make_shared<Primitive>();
  p->user_filter = fusion.depthwise > 0 ? memory::desc({g.c, fusion.depthwise, 1, g.kh, g.kw}, kF32, Tag::hwigo)
                                       : memory::desc({o, g.c, g.kh, g.kw}, kF32, Tag::hwio);
  // oneDNN 3 (Debian 13) builds primitive descriptors directly; 2 (Debian 12) from op descriptors.
  // The backward kinds are never fused, so this is also their hint. An empty bias desc: none.
  const auto direct = dnnl::algorithm::convolution_direct;
#if DNNL_VERSION_MAJOR >= 3
  const dnnl::convolution_forward::primitive_desc forward(Engine(), dnnl::prop_kind::forward_training, direct, src,
                                                          any_filter, bias, dst, strides, pad_l, pad_r, forward_attr);
#else
  const dnnl::convolution_forward::primitive_desc forward(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, direct, src, any_filter, bias, dst, strides,
                                      pad_l, pad_r),
      forward_attr, Engine());
#endif
  if (kind == Kind::kForward) {
    // A 3x3 stride-1 convolution of whole 16-channel blocks runs as Winograd's F(4x4, 3x3)
    // where oneDNN has it: about 1.5x the direct convolution's speed forward here (not
    // backward, which stays direct), for two reorders and rounding errors a few times
    // larger (~1e-6 relative, not 1e-7).
    if (fusion.block == 0 && fusion.depthwise == 0 && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.c % 16 == 0 && o % 16 == 0) {
      try {
        const memory::desc any_src({n, g.c, g.h, g.w}, kF32, Tag::any), any_dst({n, o, g.oh, g.ow}, kF32, Tag::any);
#if DNNL_VERSION_MAJOR >= 3
        const dnnl::convolution_forward::primitive_desc wino(Engine(), dnnl::prop_kind::forward_training,
                                                             dnnl::algorithm::convolution_winograd, any_src, any_filter,
                                                             bias, any_dst, strides, pad_l, pad_r, forward_attr);
#else
        const dnnl::convolution_forward::primitive_desc wino(
            dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_winograd,
                                            any_src, any_filter, bias, any_dst, strides, pad_l, pad_r),
            forward_attr, Engine());
#endif
        p->primitive = dnnl::convolution_forward(wino);
        p->filter = wino.weights_desc();
        p->scratch = wino.scratchpad_desc();
        p->src = wino.src_desc();
        p->dst = wino.dst_desc();
        return std::shared_ptr<const Primitive>(std::move(p));
      } catch (const dnnl::error&) {
        // Not for this machine or shape: the direct convolution below.
      }
    }
    p->primitive = dnnl::convolution_forward(forward);
    p->filter = forward.weights_desc();
    p->scratch = forward.scratchpad_desc();
    p->src = src;
    p->dst = dst;
  } else if (kind == Kind::kBackwardInput) {
#if DNNL_VERSION_MAJOR >= 3
    const dnnl::convolution_backward_data::primitive_desc pd(Engine(), direct, src, any_filter, dst, strides, pad_l,
                                                             pad_r, forward, attr);
#else
    const dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(direct, src, any_filter, dst, strides, pad_l, pad_r), attr, Engine(),
        forward);
#endif
    p->primitive = dnnl::convolution_backward_data(pd);
    p->filter = pd.weights_desc();
    p->scratch = pd.scratchpad_desc();
  } else {
#if DNNL_VERSION_MAJOR >= 3
    const dnnl::convolution_backward_weights::primitive_desc pd(Engine(), direct, src, any_filter, dst, strides, pad_l,
                                                                pad_r, forward, attr);
#else
    const dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(direct, src, any_filter, dst, strides, pad_l, pad_r), attr, Engine(),
        forward);
#endif
    p->primitive = dnnl::convolution_backward_weights(pd);
    p->filter = pd.diff_weights_desc();
    p->scratch = pd.scratchpad_desc();
  }
  return std::shared_ptr<const Primitive>(std::move(p));
}

// Built once per shape (a model has a handful: its layers, a last partial batch), since
// creating a primitive generates code.
StatusOr<std::shared_ptr<const Primitive>> Get(Kind kind, const Geometry& g, int64_t n, int64_t o, Fusion fusion) {
  static std::mutex mu;
  static auto* cache = new std::map<Key, std::shared_ptr<const Primitive>>();
  const Key key{kind, n, g.h, g.w, g.c, o, g.kh, g.kw, g.sh, g.sw, g.pad_top, g.pad_left, g.oh, g.ow, fusion.bias,
                fusion.relu, fusion.relu6, fusion.sum, fusion.depthwise, fusion.block, fusion.nchw_src};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache->find(key); it != cache->end()) return it->second;
  }
  StatusOr<std::shared_ptr<const Primitive>> p = [&]() -> StatusOr<std::shared_ptr<const Primitive>> {
    try {
      return Build(kind, g, n, o, fusion);
    } catch (const dnnl::error& e) {
      return errors::Internal("oneDNN could not build a convolution for input [", n, ", ", g.h, ", ", g.w, ", ",
                              g.c, "] and ", o, " filters of ", g.kh, "x", g.kw, ": ", e.what());
    }
  }();
  if (!p.ok()) return p;
  std::lock_guard<std::mutex> lock(mu);
  return cache->emplace(key, *p).first->second;
}

}  // namespace

struct PackedFilter::Layouts {
  // `user_filter` (the whole filter, or the part of it one part of the output channels
  // reads) in layout `want`, reordered the first time it is asked for.
  void* Get(const memory::desc& want, const memory& user_filter, dnnl::stream& stream) {
    std::lock_guard<std::mutex> lock(mu);
    if (source != user_filter.get_data_handle()) {  // a kernel's constant is always the same buffer; if not, start over
      made.clear();
      source = user_filter.get_data_handle();
    }
    const memory::desc from = user_filter.get_desc();
    for (auto& [to, of, tensor] : made) {
      if (to == want && of == from) return tensor.raw_data();
    }
    Tensor packed(DataType::kUInt8, TensorShape({static_cast<int64_t>(want.get_size())}));
    memory to(want, Engine(), packed.raw_data());
    dnnl::reorder(user_filter, to).execute(stream, const_cast<memory&>(user_filter), to);
    stream.wait();
    made.emplace_back(want, from, std::move(packed));
    return std::get<2>(made.back()).raw_data();
  }

  std::mutex mu;
  const void* source = nullptr;
  std::vector<std::tuple<memory::desc, memory::desc, Tensor>> made;  // layout, source part, filter
};

PackedFilter::PackedFilter() : layouts_(std::make_unique<Layouts>()) {}
PackedFilter::~PackedFilter() = default;

namespace {

// Makes `buffer` at least `bytes` long, keeping it if it already is.
Status Reserve(OpKernelContext* ctx, size_t bytes, Tensor* buffer) {
  if (buffer->TotalBytes() >= bytes) return Status::OK();
  return ctx->allocate_temp(DataType::kUInt8, TensorShape({static_cast<int64_t>(bytes)}), buffer);
}

// How much of a convolution's output ForwardPart makes at once when it pools: within the L2
// of the core making it (2 MiB here), from where the pool reads it. Larger chunks give
// oneDNN's calls more images each: the CNN's inference at one thread took 4.0 ms a batch
// at 1.5 MiB against 4.4 at 384 KiB; 3 and 8 MiB gained nothing more.
constexpr int64_t kPoolChunkBytes = 1536 << 10;

// One thread's share of a forward convolution: images [first, first + n) of `out` (pooled,
// with a max_pool). `filter` is the user's [KH, KW, C, O]. Without a pool the primitive
// writes `out` directly; with one it makes a few images at a time, which the pool then
// reads from cache.
Status ForwardPart(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* src, const float* filter,
                   const ConvEpilogue& epilogue, int64_t depthwise, PackedFilter* packed, int64_t first, int64_t n,
                   float* out) {
  const Geometry* pool = epilogue.max_pool;
  const int64_t image_bytes = g.oh * g.ow * o * static_cast<int64_t>(sizeof(float));
  const int64_t chunk =
      pool == nullptr ? n : std::clamp<int64_t>(kPoolChunkBytes / std::max<int64_t>(image_bytes, 1), 1, n);
  const Fusion fusion{epilogue.bias != nullptr, epilogue.relu, epilogue.relu6, false, depthwise};
  Tensor buffer, filter_buffer, scratch, src_buffer, dst_buffer;
  try {
    dnnl::stream stream(Engine());
    memory user_filter, prim_filter;  // the filter as given, and as the current primitive wants it
    for (int64_t done = 0; done < n; done += chunk) {
      const int64_t m = std::min(chunk, n - done);
      ASSIGN_OR_RETURN(std::shared_ptr<const Primitive> p, Get(Kind::kForward, g, m, o, fusion));
      if (!user_filter) user_filter = memory(p->user_filter, Engine(), const_cast<float*>(filter));
      // A partial last chunk's primitive may want another layout.
      if (!prim_filter || prim_filter.get_desc() != p->filter) {
        if (p->filter == p->user_filter) {
          prim_filter = user_filter;
        } else if (packed != nullptr) {
          prim_filter = memory(p->filter, Engine(), packed->layouts().Get(p->filter, user_filter, stream));
        } else {
          RETURN_IF_ERROR(ctx->allocate_temp(DataType::kUInt8,
                                             TensorShape({static_cast<int64_t>(p->filter.get_size())}), &filter_buffer));
          prim_filter = memory(p->filter, Engine(), filter_buffer.raw_data());
          dnnl::reorder(user_filter, prim_filter).execute(stream, user_filter, prim_filter);
        }
      }
      RETURN_IF_ERROR(Reserve(ctx, p->scratch.get_size(), &scratch));
      const int64_t image = first + done;
      // A pool reads a Winograd convolution's blocked output where it lies (pooling.h), and
      // any other from an NHWC buffer.
      const bool pool_blocked =
          pool != nullptr && p->dst == memory::desc({m, o, g.oh, g.ow}, kF32, Tag::nChw16c);
      float* dst = pool_blocked ? nullptr : out + image * g.oh * g.ow * o;
      if (pool != nullptr && !pool_blocked) {
        RETURN_IF_ERROR(Reserve(ctx, m * g.oh * g.ow * o * sizeof(float), &buffer));
        dst = static_cast<float*>(buffer.raw_data());
      }
      memory user_src(memory::desc({m, g.c, g.h, g.w}, kF32, Tag::nhwc), Engine(),
                      const_cast<float*>(src) + image * g.h * g.w * g.c);
      memory user_dst(memory::desc({m, o, g.oh, g.ow}, kF32, Tag::nhwc), Engine(), dst);
      memory prim_src = user_src, prim_dst = user_dst;
      const bool reorder_dst = p->dst != user_dst.get_desc();
      if (p->src != user_src.get_desc()) {
        RETURN_IF_ERROR(Reserve(ctx, p->src.get_size(), &src_buffer));
        prim_src = memory(p->src, Engine(), src_buffer.raw_data());
        dnnl::reorder(user_src, prim_src).execute(stream, user_src, prim_src);
      }
      if (reorder_dst) {
        RETURN_IF_ERROR(Reserve(ctx, p->dst.get_size(), &dst_buffer));
        prim_dst = memory(p->dst, Engine(), dst_buffer.raw_data());
      }
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, prim_src},
                                           {DNNL_ARG_WEIGHTS, prim_filter},
                                           {DNNL_ARG_DST, prim_dst},
                                           {DNNL_ARG_SCRATCHPAD, memory(p->scratch, Engine(), scratch.raw_data())}};
      if (fusion.bias) {
        args.emplace(DNNL_ARG_BIAS, memory(memory::desc({o}, kF32, Tag::x), Engine(), const_cast<float*>(epilogue.bias)));
      }
      p->primitive.execute(stream, args);
      if (reorder_dst && !pool_blocked) dnnl::reorder(prim_dst, user_dst).execute(stream, prim_dst, user_dst);
      stream.wait();
      if (pool != nullptr) {
        const int64_t pooled = image * pool->oh * pool->ow * o;
        if (pool_blocked) {
          MaxPoolBlockedImages(static_cast<const float*>(dst_buffer.raw_data()), *pool, 0, m, epilogue.relu,
                               out + pooled, epilogue.argmax != nullptr ? epilogue.argmax + pooled : nullptr);
        } else if (epilogue.argmax != nullptr) {
          MaxPoolImagesWithArgmax(dst, *pool, 0, m, epilogue.relu, out + pooled, epilogue.argmax + pooled);
        } else {
          PoolImages<float, true>(dst, *pool, 0, m, out + pooled);
        }
      }
    }
  } catch (const dnnl::error& e) {
    return errors::Internal("oneDNN convolution failed: ", e.what());
  }
  return Status::OK();
}

// Whether a full convolution is a 1x1 one of 1x1 images (a squeeze-and-excitation's, over
// its channels' means): each image's row of channels times the [C, O] filter. oneDNN's call
// costs ~15 us more than the few thousand multiply-adds take (EfficientNetB0's 32 such at
// batch 1).
bool IsRowTimesFilter(const Geometry& g, int64_t depthwise, const ConvEpilogue& epilogue) {
  return depthwise == 0 && g.h == 1 && g.w == 1 && g.kh == 1 && g.kw == 1 && g.oh == 1 && g.ow == 1 &&
         epilogue.max_pool == nullptr;
}

// out [N, O] (= [N, 1, 1, O], NHWC or blocked alike) from in [N, C] and filter [C, O], with
// the epilogue's summand, bias and activation.
void RowTimesFilter(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* in, const float* filter,
                    float* out, const ConvEpilogue& epilogue) {
  ctx->ParallelFor(g.n, g.c * o, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* __restrict y = out + i * o;
      if (!epilogue.sum) std::fill_n(y, o, 0.f);
      if (epilogue.bias != nullptr) {
        for (int64_t j = 0; j < o; ++j) y[j] += epilogue.bias[j];
      }
      for (int64_t k = 0; k < g.c; ++k) {
        const float x = in[i * g.c + k];
        const float* __restrict w = filter + k * o;
        for (int64_t j = 0; j < o; ++j) y[j] += x * w[j];
      }
      if (epilogue.relu6) {
        for (int64_t j = 0; j < o; ++j) y[j] = std::min(std::max(y[j], 0.f), 6.f);
      } else if (epilogue.relu) {
        for (int64_t j = 0; j < o; ++j) y[j] = std::max(y[j], 0.f);
      }
    }
  });
}

// Output rows of one image a thread makes at least, in multiply-adds: below this a slab's
// hand-off between threads costs more than it saves (the Fashion-MNIST CNN's layers, ~1M
// each, ran slower cut in two; MobileNetV2's at 224x224, 2-20M, ran 1.6-1.9x faster).
constexpr int64_t kMinSlabMacs = int64_t{2} << 20;

// The forward convolution, the batch in parts, one per intra-op thread; a single image, in
// slabs of output rows, each a convolution of its own over the input rows its windows read.
Status Forward(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* src, const float* filter, float* out,
               const ConvEpilogue& epilogue, int64_t depthwise, PackedFilter* packed) {
  if (IsRowTimesFilter(g, depthwise, epilogue)) {
    RowTimesFilter(ctx, g, o, src, filter, out, epilogue);
    return Status::OK();
  }
  const int64_t macs = g.oh * g.ow * o * g.kh * g.kw * (depthwise > 0 ? 1 : g.c);
  const int64_t slabs =
      std::min<int64_t>({ctx->intra_op_pool()->NumThreads(), g.oh, std::max<int64_t>(1, macs / kMinSlabMacs)});
  if (g.n == 1 && epilogue.max_pool == nullptr && slabs > 1) {
    std::vector<Status> status(slabs);
    ctx->ParallelFor(slabs, int64_t{1} << 30, [&](int64_t begin, int64_t end) {
      OneDnnOnThisThreadOnly();
      for (int64_t slab = begin; slab < end; ++slab) {
        const int64_t first = slab * g.oh / slabs, last = (slab + 1) * g.oh / slabs;
        const int64_t top = first * g.sh - g.pad_top, bottom = (last - 1) * g.sh - g.pad_top + g.kh;
        Geometry part = g;
        part.pad_top = std::max<int64_t>(0, -top);
        part.h = std::min(g.h, bottom) - std::max<int64_t>(0, top);
        part.oh = last - first;
        status[slab] = ForwardPart(ctx, part, o, src + std::max<int64_t>(0, top) * g.w * g.c, filter, epilogue,
                                   depthwise, packed, 0, 1, out + first * g.ow * o);
      }
    });
    for (const Status& s : status) RETURN_IF_ERROR(s);
    return Status::OK();
  }
  const BatchParts parts(ctx, g.n);
  std::vector<Status> status(parts.count());
  parts.ForEach([&](int64_t part, int64_t first, int64_t n) {
    OneDnnOnThisThreadOnly();
    status[part] = ForwardPart(ctx, g, o, src, filter, epilogue, depthwise, packed, first, n, out);
  });
  for (const Status& s : status) RETURN_IF_ERROR(s);
  return Status::OK();
}

// One part of a forward convolution in a blocked layout: `g.n` images from `src`, output
// channels [o_first, o_first + o_count) of `o` into `out` (where that part of the output
// starts). A depthwise part's input channels are those its output channels read.
Status BlockedPart(OpKernelContext* ctx, const Geometry& g, int64_t o, const Fusion& fusion, const float* src,
                   const float* filter, const float* bias, PackedFilter* packed, int64_t o_first, int64_t o_count,
                   float* out) {
  const int64_t m = fusion.depthwise;
  Geometry part = g;
  if (m > 0) part.c = o_count / m;
  ASSIGN_OR_RETURN(std::shared_ptr<const Primitive> p, Get(Kind::kForward, part, g.n, o_count, fusion));
  try {
    dnnl::stream stream(Engine());
    // The user's whole filter, and the part of it this part reads.
    const memory::desc whole = m > 0 ? memory::desc({g.c, m, 1, g.kh, g.kw}, kF32, Tag::hwigo)
                                     : memory::desc({o, g.c, g.kh, g.kw}, kF32, Tag::hwio);
    const memory::desc read = m > 0 ? whole.submemory_desc({part.c, m, 1, g.kh, g.kw}, {o_first / m, 0, 0, 0, 0})
                                    : whole.submemory_desc({o_count, g.c, g.kh, g.kw}, {o_first, 0, 0, 0});
    memory user_filter(read, Engine(), const_cast<float*>(filter));
    Tensor filter_buffer, scratch;
    memory prim_filter;
    if (packed != nullptr) {
      prim_filter = memory(p->filter, Engine(), packed->layouts().Get(p->filter, user_filter, stream));
    } else {
      RETURN_IF_ERROR(Reserve(ctx, p->filter.get_size(), &filter_buffer));
      prim_filter = memory(p->filter, Engine(), filter_buffer.raw_data());
      dnnl::reorder(user_filter, prim_filter).execute(stream, user_filter, prim_filter);
    }
    RETURN_IF_ERROR(Reserve(ctx, p->scratch.get_size(), &scratch));
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(p->src, Engine(), const_cast<float*>(src))},
                                         {DNNL_ARG_WEIGHTS, prim_filter},
                                         {DNNL_ARG_DST, memory(p->dst, Engine(), out)},
                                         {DNNL_ARG_SCRATCHPAD, memory(p->scratch, Engine(), scratch.raw_data())}};
    if (fusion.bias) {
      args.emplace(DNNL_ARG_BIAS,
                   memory(memory::desc({o_count}, kF32, Tag::x), Engine(), const_cast<float*>(bias) + o_first));
    }
    p->primitive.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    return errors::Internal("oneDNN convolution failed: ", e.what());
  }
  return Status::OK();
}

// A blocked single image's part of output channels a thread makes at least, in
// multiply-adds (~5 us): its parts are whole primitives, which cost less to hand off than
// the NHWC path's slabs (MobileNetV2 at batch 1 on two threads: 8.1 ms cut from
// kMinSlabMacs, 7.3 from here, medians of 8 runs).
constexpr int64_t kMinBlockedPartMacs = 200 << 10;

// The forward convolution in a blocked layout: the batch in parts, one per intra-op thread;
// a single image in parts of its output channels, each a whole number of blocks and a
// contiguous run of the output (and, depthwise, of the input).
Status BlockedForward(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* src, const float* filter,
                      float* out, const ConvEpilogue& epilogue, int64_t depthwise, int64_t block, bool nchw_src,
                      PackedFilter* packed) {
  if (IsRowTimesFilter(g, depthwise, epilogue)) {  // [N, C / B, 1, 1, B] is [N, C]
    RowTimesFilter(ctx, g, o, src, filter, out, epilogue);
    return Status::OK();
  }
  const Fusion fusion{epilogue.bias != nullptr, epilogue.relu, epilogue.relu6, epilogue.sum, depthwise, block,
                      nchw_src};
  const int64_t macs = g.oh * g.ow * o * g.kh * g.kw * (depthwise > 0 ? 1 : g.c);
  const int64_t blocks = o / block;
  // A depthwise part's input channels must be whole blocks too: with a multiplier of 1 they
  // are the output's.
  const int64_t parts = depthwise > 1 ? 1
                                      : std::min<int64_t>({ctx->intra_op_pool()->NumThreads(), blocks,
                                                           std::max<int64_t>(1, macs / kMinBlockedPartMacs)});
  if (g.n == 1 && parts > 1) {
    std::vector<Status> status(parts);
    ctx->ParallelFor(parts, int64_t{1} << 30, [&](int64_t begin, int64_t end) {
      OneDnnOnThisThreadOnly();
      for (int64_t part = begin; part < end; ++part) {
        const int64_t first = part * blocks / parts * block, count = (part + 1) * blocks / parts * block - first;
        const float* part_src = depthwise > 0 ? src + first * g.h * g.w : src;
        status[part] = BlockedPart(ctx, g, o, fusion, part_src, filter, epilogue.bias, packed, first, count,
                                   out + first * g.oh * g.ow);
      }
    });
    for (const Status& s : status) RETURN_IF_ERROR(s);
    return Status::OK();
  }
  const BatchParts batch(ctx, g.n);
  std::vector<Status> status(batch.count());
  batch.ForEach([&](int64_t part, int64_t first, int64_t n) {
    OneDnnOnThisThreadOnly();
    Geometry some = g;
    some.n = n;
    status[part] = BlockedPart(ctx, some, o, fusion, src + first * g.c * g.h * g.w, filter, epilogue.bias, packed, 0,
                               o, out + first * o * g.oh * g.ow);
  });
  for (const Status& s : status) RETURN_IF_ERROR(s);
  return Status::OK();
}

// Runs a backward `kind` over the batch in parts, one per intra-op thread. `filter` is the
// user's [KH, KW, C, O] filter (read) or filter gradient (written; parts' gradients are summed).
// `depthwise`: the channel multiplier of a depthwise convolution (o = C * multiplier), or 0.
Status RunBackward(OpKernelContext* ctx, Kind kind, const Geometry& g, int64_t o, int64_t depthwise, float* d_src,
                   const float* filter, float* d_filter, const float* src, const float* d_dst) {
  const BatchParts parts(ctx, g.n);
  const int64_t filter_size = g.kh * g.kw * g.c * (depthwise > 0 ? depthwise : o);
  // Each part after the first writes its filter gradient here, summed afterwards.
  Tensor partial_filters;
  if (kind == Kind::kBackwardFilter && parts.count() > 1) {
    RETURN_IF_ERROR(
        ctx->allocate_temp(DataType::kFloat, TensorShape({parts.count() - 1, filter_size}), &partial_filters));
  }
  std::vector<Status> status(parts.count());
  parts.ForEach([&](int64_t part, int64_t first, int64_t n) {
    OneDnnOnThisThreadOnly();
    status[part] = [&]() -> Status {
      Fusion fusion;
      fusion.depthwise = depthwise;
      ASSIGN_OR_RETURN(std::shared_ptr<const Primitive> p, Get(kind, g, n, o, fusion));
      try {
        dnnl::stream stream(Engine());
        Tensor scratch, filter_buffer;
        RETURN_IF_ERROR(ctx->allocate_temp(
            DataType::kUInt8, TensorShape({static_cast<int64_t>(p->scratch.get_size())}), &scratch));
        const bool reorder = p->filter != p->user_filter;
        if (reorder) {
          RETURN_IF_ERROR(ctx->allocate_temp(
              DataType::kUInt8, TensorShape({static_cast<int64_t>(p->filter.get_size())}), &filter_buffer));
        }
        float* part_filter = kind == Kind::kBackwardInput ? const_cast<float*>(filter)
                             : part == 0                   ? d_filter
                                           : partial_filters.data<float>() + (part - 1) * filter_size;
        memory user_filter(p->user_filter, Engine(), part_filter);
        memory prim_filter = reorder ? memory(p->filter, Engine(), filter_buffer.raw_data()) : user_filter;
        if (reorder && kind == Kind::kBackwardInput) dnnl::reorder(user_filter, prim_filter).execute(stream, user_filter, prim_filter);
        const int64_t src_offset = first * g.h * g.w * g.c, dst_offset = first * g.oh * g.ow * o;
        const memory::desc src_md({n, g.c, g.h, g.w}, kF32, Tag::nhwc);
        const memory::desc dst_md({n, o, g.oh, g.ow}, kF32, Tag::nhwc);
        memory scratch_mem(p->scratch, Engine(), scratch.raw_data());
        if (kind == Kind::kBackwardInput) {
          memory s(src_md, Engine(), d_src + src_offset), d(dst_md, Engine(), const_cast<float*>(d_dst) + dst_offset);
          p->primitive.execute(stream, {{DNNL_ARG_DIFF_SRC, s}, {DNNL_ARG_WEIGHTS, prim_filter},
                                        {DNNL_ARG_DIFF_DST, d}, {DNNL_ARG_SCRATCHPAD, scratch_mem}});
        } else {
          memory s(src_md, Engine(), const_cast<float*>(src) + src_offset);
          memory d(dst_md, Engine(), const_cast<float*>(d_dst) + dst_offset);
          p->primitive.execute(stream, {{DNNL_ARG_SRC, s}, {DNNL_ARG_DIFF_WEIGHTS, prim_filter},
                                        {DNNL_ARG_DIFF_DST, d}, {DNNL_ARG_SCRATCHPAD, scratch_mem}});
          if (reorder) dnnl::reorder(prim_filter, user_filter).execute(stream, prim_filter, user_filter);
        }
        stream.wait();
      } catch (const dnnl::error& e) {
        return errors::Internal("oneDNN convolution failed: ", e.what());
      }
      return Status::OK();
    }();
  });
  for (const Status& s : status) RETURN_IF_ERROR(s);
  for (int64_t part = 1; part < parts.count() && kind == Kind::kBackwardFilter && parts.size(part) > 0; ++part) {
    const float* partial = partial_filters.data<float>() + (part - 1) * filter_size;
    for (int64_t i = 0; i < filter_size; ++i) d_filter[i] += partial[i];
  }
  return Status::OK();
}

}  // namespace

Status DnnlConv2D(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* in, const float* filter, float* out,
                  const ConvEpilogue& epilogue, PackedFilter* packed) {
  return Forward(ctx, g, o, in, filter, out, epilogue, 0, packed);
}

Status DnnlDepthwiseConv2D(OpKernelContext* ctx, const Geometry& g, int64_t multiplier, const float* in,
                           const float* filter, float* out, const ConvEpilogue& epilogue, PackedFilter* packed) {
  return Forward(ctx, g, g.c * multiplier, in, filter, out, epilogue, multiplier, packed);
}

Status DnnlBlockedConv2D(OpKernelContext* ctx, const Geometry& g, int64_t o, int64_t depthwise, int64_t block,
                         const float* in, const float* filter, float* out, const ConvEpilogue& epilogue,
                         PackedFilter* packed) {
  return BlockedForward(ctx, g, o, in, filter, out, epilogue, depthwise, block, false, packed);
}

Status DnnlBlockedConv2DFromNhwc(OpKernelContext* ctx, const Geometry& g, int64_t o, int64_t block, const float* in,
                                 const float* filter, float* out, const ConvEpilogue& epilogue, PackedFilter* packed) {
  Tensor nchw;
  RETURN_IF_ERROR(ctx->allocate_temp(DataType::kFloat, TensorShape({g.n, g.c, g.h, g.w}), &nchw));
  // Rows across the intra-op threads, so that one image is cut too (a first layer's few
  // channels: each row a transpose of [W, C] into C runs of W).
  float* to = nchw.data<float>();
  ctx->ParallelFor(g.n * g.h, 2 * g.w * g.c, [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) {
      const int64_t image = row / g.h, y = row % g.h;
      const float* from = in + row * g.w * g.c;
      for (int64_t c = 0; c < g.c; ++c) {
        float* plane_row = to + ((image * g.c + c) * g.h + y) * g.w;
        for (int64_t x = 0; x < g.w; ++x) plane_row[x] = from[x * g.c + c];
      }
    }
  });
  return BlockedForward(ctx, g, o, nchw.data<float>(), filter, out, epilogue, 0, block, true, packed);
}

Status DnnlConv2DBackpropInput(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* filter,
                               const float* d_out, float* d_in) {
  return RunBackward(ctx, Kind::kBackwardInput, g, o, 0, d_in, filter, nullptr, nullptr, d_out);
}

Status DnnlConv2DBackpropFilter(OpKernelContext* ctx, const Geometry& g, int64_t o, const float* in,
                                const float* d_out, float* d_filter) {
  return RunBackward(ctx, Kind::kBackwardFilter, g, o, 0, nullptr, nullptr, d_filter, in, d_out);
}

Status DnnlDepthwiseConv2DBackpropInput(OpKernelContext* ctx, const Geometry& g, int64_t multiplier,
                                        const float* filter, const float* d_out, float* d_in) {
  return RunBackward(ctx, Kind::kBackwardInput, g, g.c * multiplier, multiplier, d_in, filter, nullptr, nullptr, d_out);
}

Status DnnlDepthwiseConv2DBackpropFilter(OpKernelContext* ctx, const Geometry& g, int64_t multiplier,
                                         const float* in, const float* d_out, float* d_filter) {
  return RunBackward(ctx, Kind::kBackwardFilter, g, g.c * multiplier, multiplier, nullptr, nullptr, d_filter, in,
                     d_out);
}

}  // namespace tessera::cpu
