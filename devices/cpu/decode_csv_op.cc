// DecodeCSV: splits each record into fields (RFC 4180 quoting when use_quote_delim) and
// parses field i as the dtype of record_defaults[i], using the default when it is empty.
#include <charconv>

#include "devices/cpu/cpu_kernels.h"

namespace tessera::cpu {
namespace {

// Splits `record` at `delim`. With quoting, a field that starts with '"' runs to the next
// lone '"', and "" inside it is one quote.
Status SplitRecord(std::string_view record, char delim, bool quoted, std::vector<std::string>* fields) {
  fields->clear();
  size_t i = 0;
  while (true) {
    std::string field;
    if (quoted && i < record.size() && record[i] == '"') {
      ++i;
      while (true) {
        if (i >= record.size()) return errors::InvalidArgument("Quoted field has to end with quote followed by delim or end");
        if (record[i] == '"') {
          if (i + 1 < record.size() && record[i + 1] == '"') {
            field.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field.push_back(record[i++]);
      }
      if (i < record.size() && record[i] != delim) {
        return errors::InvalidArgument("Quote inside a string has to be escaped by another quote");
      }
    } else {
      size_t end = record.find(delim, i);
      if (end == std::string_view::npos) end = record.size();
      field.assign(record.substr(i, end - i));
      i = end;
    }
    fields->push_back(std::move(field));
    if (i >= record.size()) return Status::OK();
    ++i;  // the delimiter
  }
}

template <typename T>
Status ParseNumber(const std::string& text, T* out) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  // from_chars takes no leading '+' and no surrounding spaces; CSV writers produce both.
  while (begin < end && *begin == ' ') ++begin;
  while (end > begin && end[-1] == ' ') --end;
  if (begin < end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, *out);
  if (ec != std::errc() || ptr != end || begin == end) return errors::InvalidArgument("bad number");
  return Status::OK();
}

class DecodeCsvOp : public OpKernel {
 public:
  explicit DecodeCsvOp(OpKernelConstruction* c) : OpKernel(c) {
    std::string delim;
    Status s = c->GetAttr("field_delim", &delim);
    if (s.ok()) s = c->GetAttr("use_quote_delim", &quoted_);
    if (s.ok()) s = c->GetAttr("na_value", &na_value_);
    if (s.ok() && delim.size() != 1) s = errors::InvalidArgument("field_delim must be one character, got '", delim, "'");
    for (int i = 0; s.ok() && i < num_outputs(); ++i) {
      DataType t = output_type(i);
      if (t != DataType::kFloat && t != DataType::kDouble && t != DataType::kInt32 && t != DataType::kInt64 &&
          t != DataType::kString) {
        s = errors::InvalidArgument("DecodeCSV column ", i, " has dtype ", DataTypeName(t),
                                    "; want float32, float64, int32, int64 or string");
      }
    }
    if (s.ok()) delim_ = delim[0];
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& records = ctx->input(0);
    const int columns = num_outputs();
    for (int i = 0; i < columns; ++i) {
      OP_REQUIRES(ctx, ctx->input(i + 1).NumElements() <= 1,
                  errors::InvalidArgument("record_defaults[", i, "] must have at most one element, has ",
                                          ctx->input(i + 1).NumElements()));
    }
    std::vector<Tensor*> out(columns);
    for (int i = 0; i < columns; ++i) OP_REQUIRES_OK(ctx, ctx->allocate_output(i, records.shape(), &out[i]));
    std::vector<std::string> fields;
    for (int64_t r = 0; r < records.NumElements(); ++r) {
      const std::string& record = records.data<std::string>()[r];
      Status s = SplitRecord(record, delim_, quoted_, &fields);
      if (!s.ok()) s = s.WithSuffix(StrCat(" in record ", r));
      if (s.ok() && static_cast<int>(fields.size()) != columns) {
        s = errors::InvalidArgument("Expect ", columns, " fields but have ", fields.size(), " in record ", r);
      }
      for (int i = 0; s.ok() && i < columns; ++i) s = Parse(ctx, fields[i], i, out[i], r);
      // The record itself, so that a bad line in a file can be found.
      OP_REQUIRES(ctx, s.ok(), s.WithSuffix(StrCat(" (record: \"", Excerpt(record), "\")")));
    }
  }

  Status Parse(OpKernelContext* ctx, const std::string& field, int column, Tensor* out, int64_t r) const {
    const Tensor& fallback = ctx->input(column + 1);
    const bool missing = field.empty() || (!na_value_.empty() && field == na_value_);
    if (missing && fallback.NumElements() == 0) {
      return errors::InvalidArgument("Field ", column, " is required but missing in record ", r, "!");
    }
    switch (out->dtype()) {
      case DataType::kString:
        out->data<std::string>()[r] = missing ? fallback.data<std::string>()[0] : field;
        return Status::OK();
      case DataType::kFloat:
        return Typed<float>(field, missing, fallback, column, r, "float", out->data<float>() + r);
      case DataType::kDouble:
        return Typed<double>(field, missing, fallback, column, r, "double", out->data<double>() + r);
      case DataType::kInt32:
        return Typed<int32_t>(field, missing, fallback, column, r, "int32", out->data<int32_t>() + r);
      default:
        return Typed<int64_t>(field, missing, fallback, column, r, "int64", out->data<int64_t>() + r);
    }
  }

  template <typename T>
  static Status Typed(const std::string& field, bool missing, const Tensor& fallback, int column, int64_t r,
                      std::string_view name, T* out) {
    if (missing) {
      *out = fallback.data<T>()[0];
      return Status::OK();
    }
    if (!ParseNumber(field, out).ok()) {
      return errors::InvalidArgument("Field ", column, " in record ", r, " is not a valid ", name, ": ", Excerpt(field));
    }
    return Status::OK();
  }

  char delim_ = ',';
  bool quoted_ = true;
  std::string na_value_;
};

}  // namespace

void RegisterDecodeCsvKernels(KernelRegistry& r) {
  r.Register<DecodeCsvOp>(KernelDefBuilder("DecodeCSV").Device(kDeviceCpu));
}

}  // namespace tessera::cpu
