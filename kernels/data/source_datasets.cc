// Source datasets: TensorDataset, TensorSliceDataset, RangeDataset, TextLineDataset and
// IdxDataset (the MNIST file format, gzipped or not).
#include <zlib.h>

#include <fstream>
#include <mutex>

#include "kernels/cpu/register.h"
#include "kernels/data/dataset_op_kernel.h"

namespace tessera::cpu {
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

// Yields row 0, 1, ... of every component together.
class SliceIterator : public DatasetIterator {
 public:
  explicit SliceIterator(std::vector<Tensor> components) : components_(std::move(components)) {}
  Status GetNext(std::vector<Tensor>* out, bool* end) override {
    if (components_.empty() || next_ >= components_[0].dim(0)) {
      *end = true;
      return Status::OK();
    }
    for (const Tensor& t : components_) out->push_back(Row(t, next_));
    ++next_;
    return Status::OK();
  }

 private:
  std::vector<Tensor> components_;
  int64_t next_ = 0;
};

class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(std::vector<Tensor> components)
      : Dataset("TensorDataset", DtypesOf(components), ShapesOf(components)), components_(std::move(components)) {}
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv&) const override {
    // One element: the components stacked into rows of one.
    std::vector<Tensor> stacked;
    for (const Tensor& t : components_) {
      TensorShape s({1});
      for (int d = 0; d < t.rank(); ++d) s.AddDim(t.dim(d));
      stacked.push_back(*t.Reshaped(s));
    }
    return std::unique_ptr<DatasetIterator>(std::make_unique<SliceIterator>(std::move(stacked)));
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
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv&) const override {
    return std::unique_ptr<DatasetIterator>(std::make_unique<SliceIterator>(components_));
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
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv&) const override {
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(*this));
  }

 private:
  class Iterator : public DatasetIterator {
   public:
    explicit Iterator(const RangeDataset& ds) : ds_(ds), next_(ds.start_) {}
    Status GetNext(std::vector<Tensor>* out, bool* end) override {
      if (ds_.step_ > 0 ? next_ >= ds_.stop_ : next_ <= ds_.stop_) {
        *end = true;
        return Status::OK();
      }
      out->push_back(Tensor::Scalar<int64_t>(next_));
      // Saturating, so a range ending near INT64_MAX cannot wrap around.
      if (__builtin_add_overflow(next_, ds_.step_, &next_)) next_ = ds_.stop_;
      return Status::OK();
    }

   private:
    const RangeDataset& ds_;
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
  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv&) const override {
    return std::unique_ptr<DatasetIterator>(std::make_unique<Iterator>(*this));
  }

 private:
  class Iterator : public DatasetIterator {
   public:
    explicit Iterator(const TextLineDataset& ds) : ds_(ds) {}
    Status GetNext(std::vector<Tensor>* out, bool* end) override {
      std::string line;
      while (true) {
        if (file_.is_open() && std::getline(file_, line)) {
          if (!line.empty() && line.back() == '\r') line.pop_back();
          out->push_back(Tensor::Scalar(std::move(line)));
          return Status::OK();
        }
        file_.close();
        if (next_file_ >= ds_.files_.size()) {
          *end = true;
          return Status::OK();
        }
        const std::string& name = ds_.files_[next_file_++];
        file_.open(name, std::ios::binary);
        if (!file_.is_open()) return errors::NotFound(name, "; No such file or directory");
      }
    }

   private:
    const TextLineDataset& ds_;
    size_t next_file_ = 0;
    std::ifstream file_;
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

// An IDX file: a big-endian header (two zero bytes, a type code, the rank, one uint32 per
// dimension) and then the data. Only unsigned bytes (code 0x08), which is what MNIST uses.
struct IdxHeader {
  std::vector<int64_t> dims;
};

class GzFile {
 public:
  explicit GzFile(const std::string& name) : file_(gzopen(name.c_str(), "rb")) {}
  ~GzFile() {
    if (file_ != nullptr) gzclose(file_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  bool is_open() const { return file_ != nullptr; }
  // Bytes read; fewer than `n` at the end of the file or on a corrupt stream.
  int64_t Read(void* dst, int64_t n) {
    int64_t total = 0;
    while (total < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<int64_t>(n - total, 1 << 30));
      const int got = gzread(file_, static_cast<char*>(dst) + total, chunk);
      if (got <= 0) break;
      total += got;
    }
    return total;
  }

 private:
  gzFile file_;
};

StatusOr<IdxHeader> ReadIdxHeader(GzFile& file, const std::string& name) {
  unsigned char magic[4];
  if (file.Read(magic, 4) != 4 || magic[0] != 0 || magic[1] != 0) {
    return errors::InvalidArgument("'", name, "' is not an IDX file (bad magic number)");
  }
  if (magic[2] != 0x08) {
    return errors::Unimplemented("IDX file '", name, "' holds type code 0x", std::to_string(magic[2]),
                                 "; only unsigned bytes (0x08) are supported");
  }
  if (magic[3] < 1 || magic[3] > 4) {
    return errors::InvalidArgument("IDX file '", name, "' has rank ", int{magic[3]}, "; expected 1 to 4");
  }
  IdxHeader header;
  int64_t total = 1;
  for (int d = 0; d < magic[3]; ++d) {
    unsigned char b[4];
    if (file.Read(b, 4) != 4) return errors::DataLoss("IDX file '", name, "' is truncated in its header");
    const int64_t dim = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
    total *= std::max<int64_t>(dim, 1);
    if (dim > (int64_t{1} << 31) || total > (int64_t{1} << 40)) {
      return errors::InvalidArgument("IDX file '", name, "' declares an implausible size");
    }
    header.dims.push_back(dim);
  }
  return header;
}

class IdxDataset : public Dataset {
 public:
  IdxDataset(std::string file, const IdxHeader& header)
      : Dataset("IdxDataset", {DataType::kUInt8}, {RecordShape(header)}), file_(std::move(file)) {}

  StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(const IteratorEnv&) const override {
    ASSIGN_OR_RETURN(Tensor records, Load());
    return std::unique_ptr<DatasetIterator>(std::make_unique<SliceIterator>(std::vector<Tensor>{records}));
  }

 private:
  static TensorShape RecordShape(const IdxHeader& header) {
    TensorShape s;
    for (size_t d = 1; d < header.dims.size(); ++d) s.AddDim(header.dims[d]);
    return s;
  }
  // The whole file, read once per dataset and shared by its iterators (each epoch of a
  // repeat makes a new one).
  StatusOr<Tensor> Load() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (records_.IsInitialized()) return records_;
    GzFile file(file_);
    if (!file.is_open()) return errors::NotFound(file_, "; No such file or directory");
    ASSIGN_OR_RETURN(IdxHeader header, ReadIdxHeader(file, file_));
    StatusOr<TensorShape> shape = TensorShape::Make(header.dims);
    RETURN_IF_ERROR(shape.status());
    ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator(), DataType::kUInt8, *shape));
    const int64_t got = file.Read(t.raw_data(), t.NumElements());
    if (got != t.NumElements()) {
      return errors::DataLoss("IDX file '", file_, "' is truncated: ", shape->DebugString(), " needs ",
                              t.NumElements(), " bytes of data, it has ", got);
    }
    records_ = t;
    return t;
  }

  std::string file_;
  mutable std::mutex mu_;
  mutable Tensor records_;  // guarded by mu_
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
    GzFile file(name);
    if (!file.is_open()) return errors::NotFound(name, "; No such file or directory");
    ASSIGN_OR_RETURN(IdxHeader header, ReadIdxHeader(file, name));
    auto ds = std::make_shared<IdxDataset>(name, header);
    if (!element_shape_.IsCompatibleWith(ds->output_shapes()[0])) {
      return errors::InvalidArgument("IDX file '", name, "' holds records of shape ",
                                     ds->output_shapes()[0].DebugString(), ", not ", element_shape_.DebugString());
    }
    return DatasetPtr(std::move(ds));
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

}  // namespace tessera::cpu
