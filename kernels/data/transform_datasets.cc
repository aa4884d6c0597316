// Datasets made from other datasets without running functions: RepeatDataset,
// SkipDataset, TakeDataset, BatchDatasetV2, PaddedBatchDatasetV2, ShuffleDataset,
// CacheDataset and ZipDataset.
#include <atomic>
#include <mutex>
#include <random>
#include <span>
#include <utility>

#include "kernels/data/data_kernels.h"
#include "kernels/data/dataset_op_kernel.h"
#include "kernels/util/batch_util.h"

namespace tessera::data {
namespace {

using Element = std::vector<Tensor>;

// A dataset over one input, yielding elements of the input's type unless told otherwise.
class UnaryDataset : public Dataset {
 public:
  UnaryDataset(std::string type, DatasetPtr input)
      : Dataset(std::move(type), input->output_dtypes(), input->output_shapes()), input_(std::move(input)) {}
  UnaryDataset(std::string type, DatasetPtr input, std::vector<TensorShape> shapes)
      : Dataset(std::move(type), input->output_dtypes(), std::move(shapes)), input_(std::move(input)) {}
  const Dataset& input() const { return *input_; }

 private:
  DatasetPtr input_;
};

class RepeatDataset : public UnaryDataset {
 public:
  RepeatDataset(DatasetPtr input, int64_t count) : UnaryDataset("RepeatDataset", std::move(input)), count_(count) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    ASSIGN_OR_RETURN(auto in, input().MakeIterator(env));
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(*this, env, std::move(in)));
  }

 private:
  class Iterator : public DatasetIterator {
   public:
    Iterator(const RepeatDataset& ds, IteratorEnv env, std::unique_ptr<DatasetIterator> in)
        : ds_(ds), env_(env), in_(std::move(in)) {}
    Status GetNext(const IteratorContext& ctx, Element* out, bool* end) override {
      while (in_ != nullptr && ds_.count_ != 0) {
        RETURN_IF_ERROR(ctx.CheckCancelled());
        bool in_end = false;
        RETURN_IF_ERROR(in_->GetNext(ctx, out, &in_end));
        if (!in_end) {
          produced_ = true;
          return Status::OK();
        }
        ++passes_;
        // An empty input would otherwise repeat forever without yielding.
        if ((ds_.count_ > 0 && passes_ >= ds_.count_) || !produced_) break;
        produced_ = false;
        ASSIGN_OR_RETURN(in_, ds_.input().MakeIterator(env_));
      }
      in_.reset();
      *end = true;
      return Status::OK();
    }

   private:
    const RepeatDataset& ds_;
    IteratorEnv env_;
    std::unique_ptr<DatasetIterator> in_;
    int64_t passes_ = 0;
    bool produced_ = false;
  };
  int64_t count_;  // < 0: forever
};

// SkipDataset (skip `count` first) and TakeDataset (stop after `count`); count < 0 means
// all of them.
template <bool kSkip>
class SkipTakeDataset : public UnaryDataset {
 public:
  SkipTakeDataset(DatasetPtr input, int64_t count)
      : UnaryDataset(kSkip ? "SkipDataset" : "TakeDataset", std::move(input)), count_(count) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    ASSIGN_OR_RETURN(auto in, input().MakeIterator(env));
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(count_, std::move(in)));
  }

 private:
  class Iterator : public DatasetIterator {
   public:
    Iterator(int64_t count, std::unique_ptr<DatasetIterator> in) : count_(count), in_(std::move(in)) {}
    Status GetNext(const IteratorContext& ctx, Element* out, bool* end) override {
      if (kSkip) {
        while (count_ != 0) {
          RETURN_IF_ERROR(ctx.CheckCancelled());
          Element skipped;
          RETURN_IF_ERROR(in_->GetNext(ctx, &skipped, end));
          if (*end) return Status::OK();
          if (count_ > 0) --count_;
        }
        return in_->GetNext(ctx, out, end);
      }
      if (count_ == 0) {
        *end = true;
        return Status::OK();
      }
      RETURN_IF_ERROR(in_->GetNext(ctx, out, end));
      if (!*end && count_ > 0) --count_;
      return Status::OK();
    }

   private:
    int64_t count_;
    std::unique_ptr<DatasetIterator> in_;
  };
  int64_t count_;
};

// Asks for the first few KiB of `t`'s bytes to be brought into the cache.
void PrefetchBytes(const Tensor& t) {
  const char* p = static_cast<const char*>(t.raw_data());
  const size_t bytes = std::min<size_t>(t.TotalBytes(), 4096);
  for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
}

// Stacks `elements` component by component. With `padded_shapes`, each component is padded
// with its `padding_values` scalar to the padded shape, a -1 dimension to the batch's
// largest; without, elements must agree in shape.
StatusOr<Element> StackBatch(std::span<const Element> elements, const std::vector<TensorShape>* padded_shapes,
                             const Element* padding_values, const std::shared_ptr<Allocator>& allocator) {
  Element batch;
  const int64_t k = static_cast<int64_t>(elements.size());
  for (size_t c = 0; c < elements[0].size(); ++c) {
    const TensorShape& first = elements[0][c].shape();
    TensorShape row = padded_shapes != nullptr ? (*padded_shapes)[c] : first;
    for (int64_t i = 0; i < k; ++i) {
      const TensorShape& s = elements[i][c].shape();
      if (padded_shapes == nullptr) {
        if (s != first) {
          return errors::InvalidArgument("Cannot batch tensors with different shapes in component ", c,
                                         ". First element had shape ", first.DebugString(), " and element ", i,
                                         " had shape ", s.DebugString(), ".");
        }
        continue;
      }
      const TensorShape& want = (*padded_shapes)[c];
      if (s.rank() != want.rank()) {
        return errors::InvalidArgument("The padded shape ", want.DebugString(), " of component ", c,
                                       " has a different rank than element ", i, "'s shape ", s.DebugString());
      }
      for (int d = 0; d < s.rank(); ++d) {
        if (want.dim(d) >= 0 && s.dim(d) > want.dim(d)) {
          return errors::InvalidArgument("Attempted to pad to a smaller size than the input element: component ",
                                         c, " of element ", i, " has shape ", s.DebugString(),
                                         ", the padded shape is ", want.DebugString());
        }
        if (want.dim(d) < 0) row.set_dim(d, i == 0 ? s.dim(d) : std::max(row.dim(d), s.dim(d)));
      }
    }
    TensorShape shape({k});
    for (int d = 0; d < row.rank(); ++d) shape.AddDim(row.dim(d));
    ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(allocator, elements[0][c].dtype(), shape));
    if (padding_values != nullptr) FillWithScalar((*padding_values)[c], &t);
    // The elements' bytes usually lie far apart (a shuffled cache): fetching some elements
    // ahead overlaps their cache misses with the copying.
    constexpr int64_t kAhead = 8;
    for (int64_t i = 0; i < std::min(k, kAhead); ++i) PrefetchBytes(elements[i][c]);
    for (int64_t i = 0; i < k; ++i) {
      if (i + kAhead < k) PrefetchBytes(elements[i + kAhead][c]);
      CopyElementIntoBatch(elements[i][c], i, &t);
    }
    batch.push_back(std::move(t));
  }
  return batch;
}

// BatchDatasetV2, and PaddedBatchDatasetV2 when given padded shapes and padding values.
class BatchDataset : public UnaryDataset {
 public:
  BatchDataset(DatasetPtr input, int64_t batch_size, bool drop_remainder, std::vector<TensorShape> padded_shapes,
               Element padding_values)
      : UnaryDataset(padding_values.empty() ? "BatchDataset" : "PaddedBatchDataset", input,
                     BatchShapes(padding_values.empty() ? input->output_shapes() : padded_shapes,
                                 drop_remainder ? batch_size : -1)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        padded_shapes_(std::move(padded_shapes)),
        padding_values_(std::move(padding_values)) {}

  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    ASSIGN_OR_RETURN(auto in, input().MakeIterator(env));
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(*this, std::move(in), ElementAllocator(env)));
  }

 private:
  static std::vector<TensorShape> BatchShapes(const std::vector<TensorShape>& rows, int64_t batch) {
    std::vector<TensorShape> shapes;
    for (const TensorShape& r : rows) {
      TensorShape s({batch});
      if (r.unknown_rank()) {
        s = TensorShape::UnknownRank();
      } else {
        for (int d = 0; d < r.rank(); ++d) s.AddDim(r.dim(d));
      }
      shapes.push_back(s);
    }
    return shapes;
  }

  class Iterator : public DatasetIterator {
   public:
    Iterator(const BatchDataset& ds, std::unique_ptr<DatasetIterator> in, std::shared_ptr<Allocator> allocator)
        : ds_(ds), in_(std::move(in)), allocator_(std::move(allocator)) {}
    Status GetNext(const IteratorContext& ctx, Element* out, bool* end) override {
      size_t count = 0;
      bool in_end = false;
      // Emptied, not freed: an input that swaps its element into the given one (a shuffle)
      // gets this storage back to fill, so a batch allocates no vector per element.
      for (Element& e : elements_) e.clear();
      while (static_cast<int64_t>(count) < ds_.batch_size_ && !in_end) {
        RETURN_IF_ERROR(ctx.CheckCancelled());
        if (count == elements_.size()) elements_.emplace_back();
        RETURN_IF_ERROR(in_->GetNext(ctx, &elements_[count], &in_end));
        if (!in_end) ++count;
      }
      if (count == 0 || (ds_.drop_remainder_ && static_cast<int64_t>(count) < ds_.batch_size_)) {
        *end = true;
        return Status::OK();
      }
      const bool padded = !ds_.padding_values_.empty();
      StatusOr<Element> batch = StackBatch(std::span<const Element>(elements_.data(), count),
                                           padded ? &ds_.padded_shapes_ : nullptr,
                                           padded ? &ds_.padding_values_ : nullptr, allocator_);
      // The batch holds copies: the elements' tensors go now, not at the next batch.
      for (Element& e : elements_) e.clear();
      RETURN_IF_ERROR(batch.status());
      *out = std::move(*batch);
      return Status::OK();
    }

   private:
    const BatchDataset& ds_;
    std::unique_ptr<DatasetIterator> in_;
    std::shared_ptr<Allocator> allocator_;
    std::vector<Element> elements_;  // the batch being gathered; kept for its storage
  };
  int64_t batch_size_;
  bool drop_remainder_;
  std::vector<TensorShape> padded_shapes_;
  Element padding_values_;
};

class ShuffleDataset : public UnaryDataset {
 public:
  ShuffleDataset(DatasetPtr input, int64_t buffer_size, uint64_t seed, bool reshuffle)
      : UnaryDataset("ShuffleDataset", std::move(input)), buffer_size_(buffer_size), seed_(seed),
        reshuffle_(reshuffle) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    ASSIGN_OR_RETURN(auto in, input().MakeIterator(env));
    // Each pass of a reshuffling dataset draws its order from the next seed of a fixed
    // sequence, so a seeded pipeline gives the same orders on every run.
    const uint64_t pass = reshuffle_ ? passes_.fetch_add(1) : 0;
    std::seed_seq seq{static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32),
                      static_cast<uint32_t>(pass), static_cast<uint32_t>(pass >> 32)};
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(buffer_size_, std::mt19937_64(seq),
                                                                       std::move(in)));
  }

 private:
  // Keeps a buffer of up to buffer_size elements and yields a uniformly chosen one,
  // refilling its slot from the input.
  class Iterator : public DatasetIterator {
   public:
    Iterator(int64_t buffer_size, std::mt19937_64 rng, std::unique_ptr<DatasetIterator> in)
        : buffer_size_(buffer_size), rng_(rng), in_(std::move(in)) {}
    Status GetNext(const IteratorContext& ctx, Element* out, bool* end) override {
      while (!in_end_ && static_cast<int64_t>(buffer_.size()) < buffer_size_) {
        RETURN_IF_ERROR(ctx.CheckCancelled());
        Element e = std::exchange(spare_, {});
        RETURN_IF_ERROR(in_->GetNext(ctx, &e, &in_end_));
        if (!in_end_) buffer_.push_back(std::move(e));
      }
      if (buffer_.empty()) {
        *end = true;
        return Status::OK();
      }
      const size_t i = std::uniform_int_distribution<size_t>(0, buffer_.size() - 1)(rng_);
      // The caller's own element, emptied, is kept to receive the next refill: a shuffled
      // pass then allocates and frees no vector per element (with a batch that hands its
      // elements back, the training demo's pipeline went from ~75 to ~65 us a batch).
      spare_ = std::move(*out);
      spare_.clear();
      *out = std::move(buffer_[i]);
      if (i + 1 != buffer_.size()) buffer_[i] = std::move(buffer_.back());
      buffer_.pop_back();
      return Status::OK();
    }

   private:
    int64_t buffer_size_;
    std::mt19937_64 rng_;
    std::unique_ptr<DatasetIterator> in_;
    bool in_end_ = false;
    std::vector<Element> buffer_;
    Element spare_;  // empty; storage for the next refill
  };
  int64_t buffer_size_;
  uint64_t seed_;
  bool reshuffle_;
  mutable std::atomic<uint64_t> passes_{0};
};

// Keeps the elements of the first complete pass in memory; later passes replay them.
class CacheDataset : public UnaryDataset {
 public:
  explicit CacheDataset(DatasetPtr input) : UnaryDataset("CacheDataset", std::move(input)) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cache_ != nullptr) return std::unique_ptr<DatasetIterator>(std::make_unique<ReplayIterator>(cache_));
    }
    ASSIGN_OR_RETURN(auto in, input().MakeIterator(env));
    return std::unique_ptr<DatasetIterator>(
        std::make_unique<FillIterator>(*this, std::move(in), ElementAllocator(env)));
  }

 private:
  // A complete pass. Where every element's components agree in shape, each component is
  // packed into one tensor whose rows are replayed as views: a pass of small elements
  // (images) then costs no reference count on a buffer of its own per element, whose
  // cache misses were most of a shuffled pipeline's time.
  struct Pass {
    size_t size = 0;
    std::vector<Element> elements;  // when not packed
    Element packed;                 // one [size, ...] tensor per component
  };
  static std::shared_ptr<const Pass> Complete(std::vector<Element> elements,
                                              const std::shared_ptr<Allocator>& allocator) {
    auto pass = std::make_shared<Pass>();
    pass->size = elements.size();
    // Unpacked where the shapes differ, or where the memory limit leaves no room for both.
    if (!elements.empty()) {
      StatusOr<Element> packed = StackBatch(elements, nullptr, nullptr, allocator);
      if (packed.ok()) {
        pass->packed = std::move(*packed);
        return pass;
      }
    }
    pass->elements = std::move(elements);
    return pass;
  }

  class ReplayIterator : public DatasetIterator {
   public:
    explicit ReplayIterator(std::shared_ptr<const Pass> pass) : pass_(std::move(pass)) {}
    Status GetNext(const IteratorContext&, Element* out, bool* end) override {
      if (next_ >= pass_->size) {
        *end = true;
      } else if (pass_->elements.empty()) {
        out->clear();
        for (const Tensor& column : pass_->packed) out->push_back(column.SubSlice(static_cast<int64_t>(next_)));
        ++next_;
      } else {
        *out = pass_->elements[next_++];
      }
      return Status::OK();
    }

   private:
    std::shared_ptr<const Pass> pass_;
    size_t next_ = 0;
  };
  class FillIterator : public DatasetIterator {
   public:
    FillIterator(const CacheDataset& ds, std::unique_ptr<DatasetIterator> in, std::shared_ptr<Allocator> allocator)
        : ds_(ds), in_(std::move(in)), allocator_(std::move(allocator)) {}
    Status GetNext(const IteratorContext& ctx, Element* out, bool* end) override {
      RETURN_IF_ERROR(in_->GetNext(ctx, out, end));
      if (!*end) {
        seen_.push_back(*out);
      } else if (!complete_) {
        complete_ = true;
        std::shared_ptr<const Pass> pass = Complete(std::move(seen_), allocator_);
        std::lock_guard<std::mutex> lock(ds_.mu_);
        if (ds_.cache_ == nullptr) ds_.cache_ = std::move(pass);
      }
      return Status::OK();
    }

   private:
    const CacheDataset& ds_;
    std::unique_ptr<DatasetIterator> in_;
    std::shared_ptr<Allocator> allocator_;
    std::vector<Element> seen_;
    bool complete_ = false;
  };
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Pass> cache_;  // guarded by mu_; set once complete
};

class ZipDataset : public Dataset {
 public:
  explicit ZipDataset(std::vector<DatasetPtr> inputs)
      : Dataset("ZipDataset", Concat(inputs, &Dataset::output_dtypes), Concat(inputs, &Dataset::output_shapes)),
        inputs_(std::move(inputs)) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    std::vector<std::unique_ptr<DatasetIterator>> its;
    for (const DatasetPtr& in : inputs_) {
      ASSIGN_OR_RETURN(auto it, in->MakeIterator(env));
      its.push_back(std::move(it));
    }
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(std::move(its)));
  }

 private:
  template <typename T>
  static std::vector<T> Concat(const std::vector<DatasetPtr>& inputs,
                               const std::vector<T>& (Dataset::*field)() const) {
    std::vector<T> all;
    for (const DatasetPtr& in : inputs) {
      const std::vector<T>& v = ((*in).*field)();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
  class Iterator : public DatasetIterator {
   public:
    explicit Iterator(std::vector<std::unique_ptr<DatasetIterator>> its) : its_(std::move(its)) {}
    Status GetNext(const IteratorContext& ctx, Element* out, bool* end) override {
      for (auto& it : its_) {
        Element part;
        RETURN_IF_ERROR(it->GetNext(ctx, &part, end));
        if (*end) {
          out->clear();
          return Status::OK();
        }
        for (Tensor& t : part) out->push_back(std::move(t));
      }
      return Status::OK();
    }

   private:
    std::vector<std::unique_ptr<DatasetIterator>> its_;
  };
  std::vector<DatasetPtr> inputs_;
};

// RepeatDataset, SkipDataset and TakeDataset: an input dataset and a count.
template <typename D>
class CountDatasetOp : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    ASSIGN_OR_RETURN(int64_t count, ScalarInt64(ctx, 1, "count"));
    return DatasetPtr(std::make_shared<D>(std::move(input), count));
  }
};

Status CheckBatchSize(int64_t batch_size) {
  if (batch_size <= 0) return errors::InvalidArgument("Batch size must be greater than zero, got ", batch_size);
  return Status::OK();
}

class BatchDatasetOp : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    ASSIGN_OR_RETURN(int64_t batch_size, ScalarInt64(ctx, 1, "batch_size"));
    ASSIGN_OR_RETURN(bool drop_remainder, ScalarBool(ctx, 2, "drop_remainder"));
    RETURN_IF_ERROR(CheckBatchSize(batch_size));
    return DatasetPtr(std::make_shared<BatchDataset>(std::move(input), batch_size, drop_remainder,
                                                     std::vector<TensorShape>{}, Element{}));
  }
};

// Inputs: input_dataset, batch_size, N padded shapes (int64 vectors), N padding values
// (scalars), drop_remainder.
class PaddedBatchDatasetOp : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    ASSIGN_OR_RETURN(int64_t batch_size, ScalarInt64(ctx, 1, "batch_size"));
    RETURN_IF_ERROR(CheckBatchSize(batch_size));
    const int n = static_cast<int>(input->output_dtypes().size());
    if (ctx->num_inputs() != 3 + 2 * n) {
      return errors::InvalidArgument("PaddedBatchDataset needs a padded shape and a padding value for each of the ",
                                     n, " components of its input");
    }
    std::vector<TensorShape> padded_shapes;
    Element padding_values;
    for (int c = 0; c < n; ++c) {
      const Tensor& s = ctx->input(2 + c);
      if (s.dtype() != DataType::kInt64 || s.rank() != 1) {
        return errors::InvalidArgument("padded_shapes[", c, "] must be an int64 vector");
      }
      TensorShape shape;
      for (int64_t d : s.flat<int64_t>()) shape.AddDim(d < 0 ? -1 : d);
      padded_shapes.push_back(shape);
      const Tensor& v = ctx->input(2 + n + c);
      if (v.rank() != 0 || v.dtype() != input->output_dtypes()[c]) {
        return errors::InvalidArgument("padding_values[", c, "] must be a scalar of the component's type ",
                                       DataTypeName(input->output_dtypes()[c]));
      }
      padding_values.push_back(v);
    }
    ASSIGN_OR_RETURN(bool drop_remainder, ScalarBool(ctx, 2 + 2 * n, "drop_remainder"));
    return DatasetPtr(std::make_shared<BatchDataset>(std::move(input), batch_size, drop_remainder,
                                                     std::move(padded_shapes), std::move(padding_values)));
  }
};

class ShuffleDatasetOp : public DatasetOpKernel {
 public:
  explicit ShuffleDatasetOp(OpKernelConstruction* c) : DatasetOpKernel(c) {
    Status s = c->GetAttr("reshuffle_each_iteration", &reshuffle_);
    if (!s.ok()) c->SetStatus(s);
  }
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    ASSIGN_OR_RETURN(int64_t buffer_size, ScalarInt64(ctx, 1, "buffer_size"));
    ASSIGN_OR_RETURN(int64_t seed, ScalarInt64(ctx, 2, "seed"));
    ASSIGN_OR_RETURN(int64_t seed2, ScalarInt64(ctx, 3, "seed2"));
    if (buffer_size <= 0) return errors::InvalidArgument("buffer_size must be greater than zero, got ", buffer_size);
    // As tf.data: no seed at all means a fresh random one.
    uint64_t mixed = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(seed2);
    if (seed == 0 && seed2 == 0) mixed = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
    return DatasetPtr(std::make_shared<ShuffleDataset>(std::move(input), buffer_size, mixed, reshuffle_));
  }

 private:
  bool reshuffle_ = true;
};

class CacheDatasetOp : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(DatasetPtr input, InputDataset(ctx, 0));
    const Tensor& f = ctx->input(1);
    if (f.dtype() != DataType::kString || f.rank() != 0) return errors::InvalidArgument("filename must be a string");
    if (!f.data<std::string>()[0].empty()) {
      return errors::Unimplemented("CacheDataset caches in memory only; give an empty filename, not '",
                                   f.data<std::string>()[0], "'");
    }
    return DatasetPtr(std::make_shared<CacheDataset>(std::move(input)));
  }
};

class ZipDatasetOp : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    std::vector<DatasetPtr> inputs;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      ASSIGN_OR_RETURN(DatasetPtr in, InputDataset(ctx, i));
      inputs.push_back(std::move(in));
    }
    return DatasetPtr(std::make_shared<ZipDataset>(std::move(inputs)));
  }
};

}  // namespace

void RegisterTransformDatasetKernels(KernelRegistry& r) {
  r.Register<CountDatasetOp<RepeatDataset>>(KernelDefBuilder("RepeatDataset").Device(kDeviceCpu));
  r.Register<CountDatasetOp<SkipTakeDataset<true>>>(KernelDefBuilder("SkipDataset").Device(kDeviceCpu));
  r.Register<CountDatasetOp<SkipTakeDataset<false>>>(KernelDefBuilder("TakeDataset").Device(kDeviceCpu));
  r.Register<BatchDatasetOp>(KernelDefBuilder("BatchDatasetV2").Device(kDeviceCpu));
  r.Register<PaddedBatchDatasetOp>(KernelDefBuilder("PaddedBatchDatasetV2").Device(kDeviceCpu));
  r.Register<ShuffleDatasetOp>(KernelDefBuilder("ShuffleDataset").Device(kDeviceCpu));
  r.Register<CacheDatasetOp>(KernelDefBuilder("CacheDataset").Device(kDeviceCpu));
  r.Register<ZipDatasetOp>(KernelDefBuilder("ZipDataset").Device(kDeviceCpu));
}

}  // namespace tessera::data
