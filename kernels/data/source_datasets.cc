// Source datasets: TensorDataset, TensorSliceDataset, RangeDataset, TextLineDataset and
// IdxDataset (the records of an IDX file, kernels/data/idx_file.h).
#include "graph/platform/file_io.h"
#include "kernels/data/data_kernels.h"
#include "kernels/data/dataset_op_kernel.h"
#include "kernels/data/idx_file.h"

namespace tessera::data {
namespace {

// Row i of `t` (a view of its buffer) without the leading dimension.
Tensor Row(const Tensor& t, int64_t i) {
  TensorShape shape;
  for (int d = 1; d < t.rank(); ++d) shape.AddDim(t.dim(d));
  return *t.Slice(i, i + 1).Reshaped(shape);
}

std::vector<TensorShape> RowShapes(const std::vector<Tensor>& components) {
  std::vector<TensorShape> shapes;
  for (const Tensor& t : components) {
    TensorShape s;
    for (int d = 1; d < t.rank(); ++d) s.AddDim(t.dim(d));
    shapes.push_back(s);
  }
  return shapes;
}

std::vector<DataType> DtypesOf(const std::vector<Tensor>& components) {
  std::vector<DataType> dtypes;
  for (const Tensor& t : components) dtypes.push_back(t.dtype());
  return dtypes;
}

// Yields row 0, 1, ... of every component together. Rows are copied, as TensorFlow copies
// slices into elements: a view would keep the whole tensor alive and escape the allocator's
// accounting of what a pipeline holds.
class SliceIterator : public DatasetIterator {
 public:
  SliceIterator(std::vector<Tensor> components, std::shared_ptr<Allocator> allocator)
      : components_(std::move(components)), allocator_(std::move(allocator)) {}
  Status GetNext(const IteratorContext&, std::vector<Tensor>* out, bool* end) override {
    if (components_.empty() || next_ >= components_[0].dim(0)) {
      *end = true;
      return Status::OK();
    }
    for (const Tensor& t : components_) {
      ASSIGN_OR_RETURN(Tensor row, Row(t, next_).DeepCopy(allocator_));
      out->push_back(std::move(row));
    }
    ++next_;
    return Status::OK();
  }

 private:
  std::vector<Tensor> components_;
  std::shared_ptr<Allocator> allocator_;
  int64_t next_ = 0;
};

class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(std::vector<Tensor> components)
      : Dataset("TensorDataset", DtypesOf(components), ShapesOf(components)), components_(std::move(components)) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    // One element: the components stacked into rows of one.
    std::vector<Tensor> stacked;
    for (const Tensor& t : components_) {
      TensorShape s({1});
      for (int d = 0; d < t.rank(); ++d) s.AddDim(t.dim(d));
      stacked.push_back(*t.Reshaped(s));
    }
    return std::unique_ptr<DatasetIterator>(std::make_unique<SliceIterator>(std::move(stacked), ElementAllocator(env)));
  }

 private:
  static std::vector<TensorShape> ShapesOf(const std::vector<Tensor>& components) {
    std::vector<TensorShape> shapes;
    for (const Tensor& t : components) shapes.push_back(t.shape());
    return shapes;
  }
  std::vector<Tensor> components_;
};

class TensorSliceDataset : public Dataset {
 public:
  explicit TensorSliceDataset(std::vector<Tensor> components)
      : Dataset("TensorSliceDataset", DtypesOf(components), RowShapes(components)),
        components_(std::move(components)) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    return std::unique_ptr<DatasetIterator>(std::make_unique<SliceIterator>(components_, ElementAllocator(env)));
  }

 private:
  std::vector<Tensor> components_;
};

std::vector<Tensor> InputList(OpKernelContext* ctx) {
  std::vector<Tensor> components;
  for (int i = 0; i < ctx->num_inputs(); ++i) components.push_back(ctx->input(i));
  return components;
}

class TensorDatasetOp : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    return DatasetPtr(std::make_shared<TensorDataset>(InputList(ctx)));
  }
};

class TensorSliceDatasetOp : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    std::vector<Tensor> components = InputList(ctx);
    for (size_t i = 0; i < components.size(); ++i) {
      if (components[i].rank() == 0) {
        return errors::InvalidArgument("Component ", i, " of a TensorSliceDataset is a scalar; slicing needs rank >= 1");
      }
      if (components[i].dim(0) != components[0].dim(0)) {
        return errors::InvalidArgument("All components of a TensorSliceDataset must have the same size in dimension 0: "
                                       "component 0 has ", components[0].dim(0), ", component ", i, " has ",
                                       components[i].dim(0));
      }
    }
    return DatasetPtr(std::make_shared<TensorSliceDataset>(std::move(components)));
  }
};

class RangeDataset : public Dataset {
 public:
  RangeDataset(int64_t start, int64_t stop, int64_t step)
      : Dataset("RangeDataset", {DataType::kInt64}, {TensorShape()}), start_(start), stop_(stop), step_(step) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(*this, ElementAllocator(env)));
  }

 private:
  class Iterator : public DatasetIterator {
   public:
    Iterator(const RangeDataset& ds, std::shared_ptr<Allocator> allocator)
        : ds_(ds), allocator_(std::move(allocator)), next_(ds.start_) {}
    Status GetNext(const IteratorContext&, std::vector<Tensor>* out, bool* end) override {
      if (ds_.step_ > 0 ? next_ >= ds_.stop_ : next_ <= ds_.stop_) {
        *end = true;
        return Status::OK();
      }
      ASSIGN_OR_RETURN(Tensor value, Tensor::Allocate(allocator_, DataType::kInt64, TensorShape()));
      value.data<int64_t>()[0] = next_;
      out->push_back(std::move(value));
      // Saturating, so a range ending near INT64_MAX cannot wrap around.
      if (__builtin_add_overflow(next_, ds_.step_, &next_)) next_ = ds_.stop_;
      return Status::OK();
    }

   private:
    const RangeDataset& ds_;
    std::shared_ptr<Allocator> allocator_;
    int64_t next_;
  };
  int64_t start_, stop_, step_;
};

class RangeDatasetOp : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(int64_t start, ScalarInt64(ctx, 0, "start"));
    ASSIGN_OR_RETURN(int64_t stop, ScalarInt64(ctx, 1, "stop"));
    ASSIGN_OR_RETURN(int64_t step, ScalarInt64(ctx, 2, "step"));
    if (step == 0) return errors::InvalidArgument("step must be a non-zero integer.");
    return DatasetPtr(std::make_shared<RangeDataset>(start, stop, step));
  }
};

StatusOr<std::vector<std::string>> Filenames(const Tensor& t) {
  if (t.dtype() != DataType::kString || t.rank() > 1) {
    return errors::InvalidArgument("filenames must be a string scalar or vector, got ", DataTypeName(t.dtype()), " ",
                                   t.shape().DebugString());
  }
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.NumElements());
}

// The lines of each file in turn, without their line endings.
class TextLineDataset : public Dataset {
 public:
  explicit TextLineDataset(std::vector<std::string> files)
      : Dataset("TextLineDataset", {DataType::kString}, {TensorShape()}), files_(std::move(files)) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(*this, ElementAllocator(env)));
  }

 private:
  class Iterator : public DatasetIterator {
   public:
    Iterator(const TextLineDataset& ds, std::shared_ptr<Allocator> allocator)
        : ds_(ds), allocator_(std::move(allocator)) {}
    Status GetNext(const IteratorContext&, std::vector<Tensor>* out, bool* end) override {
      std::string line;
      while (true) {
        if (file_ != nullptr) {
          ASSIGN_OR_RETURN(const bool got, NextLine(&line));
          if (got) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            ASSIGN_OR_RETURN(Tensor value, Tensor::Allocate(allocator_, DataType::kString, TensorShape()));
            value.data<std::string>()[0] = std::move(line);
            out->push_back(std::move(value));
            return Status::OK();
          }
        }
        if (next_file_ >= ds_.files_.size()) {
          file_.reset();
          *end = true;
          return Status::OK();
        }
        ASSIGN_OR_RETURN(file_, ReadableFile::Open(ds_.files_[next_file_++], "text file"));
        offset_ = 0;
        buffer_.clear();
        start_ = 0;
      }
    }

   private:
    // The next line of file_ without its '\n'; false at the end of the file. A last line
    // without a newline is a line.
    StatusOr<bool> NextLine(std::string* line) {
      for (;;) {
        const size_t newline = buffer_.find('\n', start_);
        if (newline != std::string::npos) {
          line->assign(buffer_, start_, newline - start_);
          start_ = newline + 1;
          return true;
        }
        buffer_.erase(0, start_);
        start_ = 0;
        char chunk[1 << 16];
        ASSIGN_OR_RETURN(const size_t got, file_->ReadUpTo(offset_, chunk, sizeof(chunk)));
        if (got == 0) {
          if (buffer_.empty()) return false;
          *line = std::move(buffer_);
          buffer_.clear();
          return true;
        }
        offset_ += got;
        buffer_.append(chunk, got);
      }
    }

    const TextLineDataset& ds_;
    std::shared_ptr<Allocator> allocator_;
    size_t next_file_ = 0;
    std::unique_ptr<ReadableFile> file_;
    uint64_t offset_ = 0;  // of file_, read up to here
    std::string buffer_;   // read but not yet returned, from start_
    size_t start_ = 0;
  };
  std::vector<std::string> files_;
};

class TextLineDatasetOp : public DatasetOpKernel {
 public:
  using DatasetOpKernel::DatasetOpKernel;
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(std::vector<std::string> files, Filenames(ctx->input(0)));
    return DatasetPtr(std::make_shared<TextLineDataset>(std::move(files)));
  }
};

// Records are read as the pass reaches them, so a pass never holds the whole file.
class IdxDataset : public Dataset {
 public:
  IdxDataset(std::string file, TensorShape record_shape)
      : Dataset("IdxDataset", {DataType::kUInt8}, {std::move(record_shape)}), file_(std::move(file)) {}

  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv& env) const override {
    ASSIGN_OR_RETURN(std::unique_ptr<IdxRecordReader> reader, IdxRecordReader::Open(file_));
    if (reader->record_shape() != output_shapes()[0]) {
      return errors::FailedPrecondition("IDX file '", file_, "' changed: its records are now of shape ",
                                        reader->record_shape().DebugString(), ", not ",
                                        output_shapes()[0].DebugString());
    }
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(std::move(reader), ElementAllocator(env)));
  }

 private:
  class Iterator : public DatasetIterator {
   public:
    Iterator(std::unique_ptr<IdxRecordReader> reader, std::shared_ptr<Allocator> allocator)
        : reader_(std::move(reader)), allocator_(std::move(allocator)) {}
    Status GetNext(const IteratorContext&, std::vector<Tensor>* out, bool* end) override {
      Tensor record;
      RETURN_IF_ERROR(reader_->ReadRecord(allocator_, &record, end));
      if (!*end) out->push_back(std::move(record));
      return Status::OK();
    }

   private:
    std::unique_ptr<IdxRecordReader> reader_;
    std::shared_ptr<Allocator> allocator_;
  };

  std::string file_;
};

class IdxDatasetOp : public DatasetOpKernel {
 public:
  explicit IdxDatasetOp(OpKernelConstruction* c) : DatasetOpKernel(c) {
    Status s = c->GetAttr("element_shape", &element_shape_);
    if (!s.ok()) c->SetStatus(s);
  }
  StatusOr<DatasetPtr> MakeDataset(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    if (t.dtype() != DataType::kString || t.rank() != 0) {
      return errors::InvalidArgument("filename must be a string scalar");
    }
    const std::string& name = t.data<std::string>()[0];
    ASSIGN_OR_RETURN(TensorShape file_shape, ReadIdxShape(name));
    TensorShape record_shape;
    for (int d = 1; d < file_shape.rank(); ++d) record_shape.AddDim(file_shape.dim(d));
    if (!element_shape_.IsCompatibleWith(record_shape)) {
      return errors::InvalidArgument("IDX file '", name, "' holds records of shape ", record_shape.DebugString(),
                                     ", not ", element_shape_.DebugString());
    }
    return DatasetPtr(std::make_shared<IdxDataset>(name, record_shape));
  }

 private:
  TensorShape element_shape_;
};

}  // namespace

void RegisterSourceDatasetKernels(KernelRegistry& r) {
  r.Register<TensorDatasetOp>(KernelDefBuilder("TensorDataset").Device(kDeviceCpu));
  r.Register<TensorSliceDatasetOp>(KernelDefBuilder("TensorSliceDataset").Device(kDeviceCpu));
  r.Register<RangeDatasetOp>(KernelDefBuilder("RangeDataset").Device(kDeviceCpu));
  r.Register<TextLineDatasetOp>(KernelDefBuilder("TextLineDataset").Device(kDeviceCpu));
  r.Register<IdxDatasetOp>(KernelDefBuilder("IdxDataset").Device(kDeviceCpu));
}

}  // namespace tessera::data
