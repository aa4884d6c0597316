#include "devices/cpu/winograd_conv.h"

#include <algorithm>
#include <vector>

#include "devices/cpu/block_vectors.h"

namespace tessera::cpu {
namespace {

using Floats8 = BlockOf<8>::Floats;

// The transforms, each applied to the rows and then the columns of a tile, eight channels
// a vector. Input: B^T d B, a 6x6 patch to 6x6.
void InputRows(const Floats8* x, Floats8* y, int stride) {
  const Floats8 x0 = x[0], x1 = x[stride], x2 = x[2 * stride], x3 = x[3 * stride], x4 = x[4 * stride],
                x5 = x[5 * stride];
  y[0] = 4 * x0 - 5 * x2 + x4;
  y[stride] = x3 + x4 - 4 * (x1 + x2);
  y[2 * stride] = 4 * (x1 - x2) + x4 - x3;
  y[3 * stride] = 2 * (x3 - x1) + x4 - x2;
  y[4 * stride] = 2 * (x1 - x3) + x4 - x2;
  y[5 * stride] = 4 * x1 - 5 * x3 + x5;
}

// Output: A^T m A, 6 values to 4.
void OutputRow(const Floats8* m, int stride, Floats8* y) {
  const Floats8 a = m[stride] + m[2 * stride], b = m[stride] - m[2 * stride], c = m[3 * stride] + m[4 * stride],
                d = m[3 * stride] - m[4 * stride];
  y[0] = m[0] + a + c;
  y[1] = b + 2 * d;
  y[2] = a + 4 * c;
  y[3] = b + 8 * d + m[5 * stride];
}

// Filter: G g G^T, a 3x3 window to 6x6.
void FilterRows(const Floats8* g, int stride, Floats8* y, int out_stride) {
  const Floats8 a = g[0], b = g[stride], c = g[2 * stride];
  y[0] = a * 0.25f;
  y[out_stride] = (a + b + c) * (-1.f / 6);
  y[2 * out_stride] = (a - b + c) * (-1.f / 6);
  y[3 * out_stride] = a * (1.f / 24) + b * (1.f / 12) + c * (1.f / 6);
  y[4 * out_stride] = a * (1.f / 24) - b * (1.f / 12) + c * (1.f / 6);
  y[5 * out_stride] = c;
}

// m[R rows, 8 * NV columns] = v[R rows, k] u, from NV panels of u, each [k, 8], `panel`
// floats apart: R x NV accumulators, in registers for R <= 6, NV <= 2.
template <int R, int NV>
void Micro(const float* v, int64_t ldv, const float* u, int64_t panel, int64_t k, float* m, int64_t ldm) {
  Floats8 acc[R][NV] = {};
  for (int64_t i = 0; i < k; ++i) {
    Floats8 b[NV];
    for (int j = 0; j < NV; ++j) b[j] = LoadBlock<Floats8>(u + j * panel + i * 8);
    for (int r = 0; r < R; ++r) {
      const float x = v[r * ldv + i];
      const Floats8 a = Broadcast<Floats8>(x);
      for (int j = 0; j < NV; ++j) acc[r][j] += a * b[j];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NV; ++j) StoreBlock(acc[r][j], m + r * ldm + j * 8);
  }
}

template <int NV>
void MicroRows(const float* v, int64_t ldv, const float* u, int64_t panel, int64_t k, float* m, int64_t ldm,
               int64_t rows) {
  int64_t r = 0;
  for (; r + 6 <= rows; r += 6) Micro<6, NV>(v + r * ldv, ldv, u, panel, k, m + r * ldm, ldm);
  v += r * ldv;
  m += r * ldm;
  switch (rows - r) {
    case 1: Micro<1, NV>(v, ldv, u, panel, k, m, ldm); break;
    case 2: Micro<2, NV>(v, ldv, u, panel, k, m, ldm); break;
    case 3: Micro<3, NV>(v, ldv, u, panel, k, m, ldm); break;
    case 4: Micro<4, NV>(v, ldv, u, panel, k, m, ldm); break;
    case 5: Micro<5, NV>(v, ldv, u, panel, k, m, ldm); break;
    default: break;
  }
}

// Tiles of 4x4 output, numbered image by image, row by row.
struct Tiles {
  explicit Tiles(const Geometry& g) : rows((g.oh + 3) / 4), cols((g.ow + 3) / 4), count(g.n * rows * cols) {}
  int64_t rows, cols, count;
};

// One layer's work, by tiles and by groups of eight channels ("lanes" of the blocked
// layout: a block of 16 holds two).
class WinogradLayer {
 public:
  WinogradLayer(const Geometry& g, int64_t o, int64_t block, const float* in, const float* u, float* out,
                const ConvEpilogue& epilogue, int64_t chunk)
      : g_(g), o_(o), block_(block), in_(in), u_(u), out_(out), epilogue_(epilogue), tiles_(g), chunk_(chunk) {}

  int64_t tiles() const { return tiles_.count; }
  int64_t chunk() const { return chunk_; }
  // Floats of scratch a chunk takes: its transformed input [36, chunk, C] and products
  // [36, chunk, O].
  int64_t scratch_floats() const { return 36 * chunk_ * (g_.c + o_); }

  // Transforms items [index0, index1) of the input of the chunk from tile `chunk_first`
  // (its tiles by input lane groups) into `v`.
  void TransformInput(int64_t chunk_first, int64_t index0, int64_t index1, float* v) const {
    const int64_t groups = g_.c / 8;
    for (int64_t index = index0; index < index1; ++index) {
      const int64_t t = index / groups, q = index % groups;
      const int64_t tile = chunk_first + t, image = tile / (tiles_.rows * tiles_.cols);
      const int64_t y0 = tile / tiles_.cols % tiles_.rows * 4 - g_.pad_top, x0 = tile % tiles_.cols * 4 - g_.pad_left;
      const float* plane = Lane(in_, image, q, g_.c, g_.h, g_.w);
      Floats8 d[36], e[36];
      for (int i = 0; i < 6; ++i) {
        const int64_t y = y0 + i;
        for (int j = 0; j < 6; ++j) {
          const int64_t x = x0 + j;
          const bool inside = y >= 0 && y < g_.h && x >= 0 && x < g_.w;
          d[i * 6 + j] = inside ? LoadBlock<Floats8>(plane + (y * g_.w + x) * block_) : Floats8{};
        }
      }
      for (int j = 0; j < 6; ++j) InputRows(d + j, e + j, 6);
      for (int i = 0; i < 6; ++i) InputRows(e + i * 6, d + i * 6, 1);
      for (int p = 0; p < 36; ++p) StoreBlock(d[p], v + (p * chunk_ + t) * g_.c + q * 8);
    }
  }

  // The products of the chunk's `count` tiles for output lane groups [q0, q1), and their
  // transform into the output with the epilogue.
  void MultiplyAndTransformOutput(int64_t chunk_first, int64_t count, int64_t q0, int64_t q1, const float* v,
                                  float* m) const {
    const bool clamp_low = epilogue_.relu || epilogue_.relu6, clamp_high = epilogue_.relu6;
    for (int p = 0; p < 36; ++p) {
      const float* vp = v + p * chunk_ * g_.c;
      const float* up = u_ + p * o_ * g_.c;
      float* mp = m + p * chunk_ * o_;
      int64_t q = q0;
      for (; q + 2 <= q1; q += 2) MicroRows<2>(vp, g_.c, up + q * g_.c * 8, g_.c * 8, g_.c, mp + q * 8, o_, count);
      if (q < q1) MicroRows<1>(vp, g_.c, up + q * g_.c * 8, g_.c * 8, g_.c, mp + q * 8, o_, count);
    }
    for (int64_t t = 0; t < count; ++t) {
      const int64_t tile = chunk_first + t, image = tile / (tiles_.rows * tiles_.cols);
      const int64_t y0 = tile / tiles_.cols % tiles_.rows * 4, x0 = tile % tiles_.cols * 4;
      for (int64_t q = q0; q < q1; ++q) {
        Floats8 s[36], r[24];
        for (int p = 0; p < 36; ++p) s[p] = LoadBlock<Floats8>(m + (p * chunk_ + t) * o_ + q * 8);
        for (int j = 0; j < 6; ++j) {
          Floats8 col[4];
          OutputRow(s + j, 6, col);
          for (int i = 0; i < 4; ++i) r[i * 6 + j] = col[i];
        }
        const Floats8 bias = epilogue_.bias != nullptr ? LoadBlock<Floats8>(epilogue_.bias + q * 8) : Floats8{};
        float* plane = Lane(out_, image, q, o_, g_.oh, g_.ow);
        for (int i = 0; i < 4 && y0 + i < g_.oh; ++i) {
          Floats8 row[4];
          OutputRow(r + i * 6, 1, row);
          for (int j = 0; j < 4 && x0 + j < g_.ow; ++j) {
            float* at = plane + ((y0 + i) * g_.ow + x0 + j) * block_;
            Floats8 value = row[j] + bias;
            if (epilogue_.sum) value += LoadBlock<Floats8>(at);
            StoreBlock(Activated(value, clamp_low, clamp_high), at);
          }
        }
      }
    }
  }

  // A whole chunk on this thread.
  void Chunk(int64_t chunk_first, float* v, float* m) const {
    const int64_t count = std::min(chunk_, tiles_.count - chunk_first);
    TransformInput(chunk_first, 0, count * (g_.c / 8), v);
    MultiplyAndTransformOutput(chunk_first, count, 0, o_ / 8, v, m);
  }

 private:
  // Where lane group `q` of `image` starts in a blocked tensor of `channels` channels.
  template <typename T>
  T* Lane(T* base, int64_t image, int64_t q, int64_t channels, int64_t h, int64_t w) const {
    return base + ((image * (channels / block_) + q * 8 / block_) * h * w) * block_ + q * 8 % block_;
  }

  const Geometry g_;
  const int64_t o_, block_;
  const float* in_;
  const float* u_;
  float* out_;
  const ConvEpilogue epilogue_;
  const Tiles tiles_;
  const int64_t chunk_;
};

// Tiles a chunk holds: its scratch within ~3 MiB, in the L2 and L3 beside the core, but
// enough rows that the products reuse each panel of the filter (measured on ResNet50's
// layers: 36-72 tiles at 64 channels ran best). Each chunk reads the whole transformed
// filter, so a thread alone takes as few chunks as that allows (ResNet50's 14x14 layers at
// batch 1, whose filters come from memory: 2.0 -> 1.7 ms as one chunk of 16 tiles, not
// 12 + 4). Threads get two chunks each where there are 12 tiles a chunk to share (ResNet50's
// 56x56 layers at batch 1 on two threads: 1.6-1.9 ms cut by output channels, 0.84-0.93 in
// chunks; fewer than 12 rows to a product ran slower than the cut by channels).
int64_t ChunkTiles(int64_t c, int64_t o, int64_t tiles, int64_t threads) {
  const int64_t fit = std::clamp<int64_t>((int64_t{3} << 20) / (36 * 4 * (c + o)), 12, 72);
  if (threads == 1) return std::min(fit, tiles);
  return std::max<int64_t>(std::min(fit, (tiles + 2 * threads - 1) / (2 * threads)), 12);
}

}  // namespace

StatusOr<Tensor> WinogradFilter(TransformedFilter* transformed, const float* filter, int64_t c, int64_t o) {
  return transformed->Get(filter, 36 * c * o, [&](float* to) {
    for (int64_t ci = 0; ci < c; ++ci) {
      for (int64_t q = 0; q < o / 8; ++q) {
        Floats8 window[9], rows[18], patch[36];
        for (int k = 0; k < 9; ++k) window[k] = LoadBlock<Floats8>(filter + (k * c + ci) * o + q * 8);
        for (int j = 0; j < 3; ++j) FilterRows(window + j, 3, rows + j, 3);          // down each column
        for (int i = 0; i < 6; ++i) FilterRows(rows + i * 3, 1, patch + i * 6, 1);  // along each row
        for (int p = 0; p < 36; ++p) StoreBlock(patch[p], to + ((p * (o / 8) + q) * c + ci) * 8);
      }
    }
  });
}

bool WinogradSuits(const Geometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && Tiles(g).count >= 16;
}

Status WinogradBlockedConv2D(OpKernelContext* ctx, const Geometry& g, int64_t o, int64_t block, const float* in,
                             const float* filter, float* out, const ConvEpilogue& epilogue,
                             TransformedFilter* transformed) {
  if (epilogue.max_pool != nullptr || (block != 8 && block != 16) || g.c % block != 0 || o % block != 0 ||
      !WinogradSuits(g)) {
    return errors::Internal("F(4x4, 3x3) takes 3x3 stride-1 convolutions of whole blocks of 8 or 16 channels, ",
                            "without a pool; got ", g.kh, "x", g.kw, " at stride ", g.sh, "x", g.sw, ", ", g.c,
                            " -> ", o, " channels in blocks of ", block, epilogue.max_pool != nullptr ? ", pooled" : "");
  }
  ASSIGN_OR_RETURN(const Tensor u, WinogradFilter(transformed, filter, g.c, o));
  const int64_t threads = ctx->intra_op_pool()->NumThreads();
  const WinogradLayer layer(g, o, block, in, u.data<float>(), out, epilogue,
                            ChunkTiles(g.c, o, Tiles(g).count, threads));
  const int64_t chunks = (layer.tiles() + layer.chunk() - 1) / layer.chunk();
  const int64_t chunk_macs = 36 * layer.chunk() * g.c * o;
  if (chunks >= 2 * threads) {
    // Whole chunks a thread: each chunk's scratch stays with the core that made it.
    std::vector<Status> status(chunks);
    ctx->ParallelFor(chunks, chunk_macs / 16, [&](int64_t first, int64_t last) {
      Tensor scratch;
      status[first] = ctx->allocate_temp(DataType::kFloat, TensorShape({layer.scratch_floats()}), &scratch);
      if (!status[first].ok()) return;
      float* v = scratch.data<float>();
      for (int64_t chunk = first; chunk < last; ++chunk) {
        layer.Chunk(chunk * layer.chunk(), v, v + 36 * layer.chunk() * g.c);
      }
    });
    for (const Status& s : status) RETURN_IF_ERROR(s);
    return Status::OK();
  }
  // Few chunks (a small single image): each one's input transform across the threads, then
  // its products and output transform by groups of output channels.
  Tensor scratch;
  RETURN_IF_ERROR(ctx->allocate_temp(DataType::kFloat, TensorShape({layer.scratch_floats()}), &scratch));
  float* v = scratch.data<float>();
  float* m = v + 36 * layer.chunk() * g.c;
  for (int64_t first = 0; first < layer.tiles(); first += layer.chunk()) {
    if (ctx->IsCancelled()) return errors::Cancelled("Step was cancelled");
    const int64_t count = std::min(layer.chunk(), layer.tiles() - first);
    ctx->ParallelFor(count * (g.c / 8), 300, [&](int64_t begin, int64_t end) {
      layer.TransformInput(first, begin, end, v);
    });
    ctx->ParallelFor(o / 8, 36 * count * g.c / 2, [&](int64_t q0, int64_t q1) {
      layer.MultiplyAndTransformOutput(first, count, q0, q1, v, m);
    });
  }
  return Status::OK();
}

}  // namespace tessera::cpu
