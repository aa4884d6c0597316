// The C API over the C++ one: each handle owns C++ objects, each call catches what could
// throw, and statuses carry the C++ Status's code and text.
#include "tessera/c_api.h"

#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "devices/linked/linked_providers.h"
#include "graph/graph.h"
#include "graph/platform/logging.h"
#include "graph/serialize/graph_file.h"
#include "graph/serialize/graph_json.h"
#include "graph/serialize/tensorflow_graph.h"
#include "placement/placement_record.h"
#include "runtime/session.h"
#include "saved_model/saved_model.h"

static_assert(sizeof(tessera_dtype) == sizeof(int), "tessera_dtype is read as an int");

struct tessera_status {
  tessera::Status status;
  std::string message;  // what tessera_status_message returns
};

struct tessera_tensor {
  tessera::Tensor tensor;  // the engine's tensor, or for a borrowed buffer, its dtype and shape only
  // A borrowed buffer: the caller's bytes and who frees them.
  void* borrowed = nullptr;
  size_t borrowed_length = 0;
  void (*deallocator)(void*, size_t, void*) = nullptr;
  void* deallocator_arg = nullptr;
  tessera::DataType dtype = tessera::DataType::kInvalid;
  tessera::TensorShape shape;
  size_t byte_size = 0;  // of the elements; 0 for strings
  // A session's result: its buffer is its own (never a feed's or the engine's) and read-only.
  bool fetched = false;
};

struct tessera_graph {
  tessera::GraphSpec def;
  int num_nodes = 0;
};

struct tessera_saved_model {
  std::unique_ptr<tessera::SavedModelBundle> bundle;
};

struct tessera_session {
  std::unique_ptr<tessera::Session> session;
  std::atomic<bool> closed{false};
  std::vector<std::string> reasons;  // PlacementReasonName per record, kept for its c_str
};

namespace {

using tessera::DataType;
using tessera::Status;
using tessera::StatusOr;
namespace errors = tessera::errors;

void Set(tessera_status* s, Status status) {
  if (s == nullptr) return;
  s->message = status.ok() ? "" : status.ToString();
  s->status = std::move(status);
}

// Runs `body`, turning an escaping exception into a status: none may cross into C.
template <typename R, typename F>
R Guard(tessera_status* s, R on_error, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    Set(s, errors::ResourceExhausted("out of memory"));
  } catch (const std::exception& e) {
    Set(s, errors::Internal(e.what()));
  }
  return on_error;
}

// A C caller may pass any int as a tessera_dtype; reading it through its bytes keeps an
// out-of-range value from being undefined behaviour in C++.
StatusOr<DataType> FromC(const tessera_dtype& dtype) {
  int dt;
  std::memcpy(&dt, &dtype, sizeof dt);
  switch (dt) {
    case TESSERA_FLOAT: return DataType::kFloat;
    case TESSERA_DOUBLE: return DataType::kDouble;
    case TESSERA_INT32: return DataType::kInt32;
    case TESSERA_UINT8: return DataType::kUInt8;
    case TESSERA_STRING: return DataType::kString;
    case TESSERA_INT64: return DataType::kInt64;
    case TESSERA_BOOL: return DataType::kBool;
    case TESSERA_BFLOAT16: return DataType::kBFloat16;
    case TESSERA_HALF: return DataType::kHalf;
  }
  return errors::InvalidArgument("unknown tessera_dtype ", dt);
}

tessera_dtype ToC(DataType dt) {
  switch (dt) {
    case DataType::kFloat: return TESSERA_FLOAT;
    case DataType::kDouble: return TESSERA_DOUBLE;
    case DataType::kInt32: return TESSERA_INT32;
    case DataType::kUInt8: return TESSERA_UINT8;
    case DataType::kString: return TESSERA_STRING;
    case DataType::kInt64: return TESSERA_INT64;
    case DataType::kBool: return TESSERA_BOOL;
    case DataType::kBFloat16: return TESSERA_BFLOAT16;
    case DataType::kHalf: return TESSERA_HALF;
    default: break;
  }
  return static_cast<tessera_dtype>(0);
}

StatusOr<tessera::TensorShape> ShapeFromC(const int64_t* dims, int num_dims) {
  if (num_dims < 0 || (num_dims > 0 && dims == nullptr)) {
    return errors::InvalidArgument("dims is NULL or num_dims (", num_dims, ") is negative");
  }
  std::vector<int64_t> d(dims, dims + num_dims);
  for (int64_t x : d) {
    if (x < 0) return errors::InvalidArgument("dimension ", x, " is negative");
  }
  return tessera::TensorShape::Make(d);
}

Status NullArgument(const char* what) { return errors::InvalidArgument(what, " is NULL"); }

// The bytes of `shape`'s elements of `dtype`; InvalidArgument when that does not fit a size_t.
StatusOr<size_t> ElementBytes(DataType dtype, const tessera::TensorShape& shape) {
  const int64_t n = shape.num_elements();
  size_t bytes = 0;
  if (n < 0 || __builtin_mul_overflow(static_cast<uint64_t>(n), tessera::DataTypeSize(dtype), &bytes)) {
    return errors::InvalidArgument("a ", tessera::DataTypeName(dtype), " tensor of shape ", shape.DebugString(),
                                   " has more bytes than a size_t holds");
  }
  return bytes;
}

// The engine tensor a C tensor feeds: its own, or a copy of the borrowed bytes.
StatusOr<tessera::Tensor> EngineTensor(const tessera_tensor* t) {
  if (t->borrowed == nullptr) return t->tensor;
  ASSIGN_OR_RETURN(tessera::Tensor copy, tessera::Tensor::Allocate(tessera::CpuAllocator(), t->dtype, t->shape));
  if (copy.TotalBytes() > 0) std::memcpy(copy.raw_data(), t->borrowed, copy.TotalBytes());
  return copy;
}

class CallbackSink : public tessera::LogSink {
 public:
  void Set(tessera_log_fn fn, void* arg) {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = fn;
    arg_ = arg;
  }
  void Write(tessera::LogSeverity severity, std::string_view message) override {
    tessera_log_fn fn;
    void* arg;
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn = fn_;
      arg = arg_;
    }
    if (fn == nullptr) return;
    const std::string line(message);
    fn(static_cast<int>(severity), line.c_str(), line.size(), arg);
  }

 private:
  std::mutex mu_;
  tessera_log_fn fn_ = nullptr;
  void* arg_ = nullptr;
};

CallbackSink& Sink() {
  static CallbackSink* sink = new CallbackSink;  // never destroyed: logging may outlive statics
  return *sink;
}

// A result may share its buffer with a feed (an Identity), a variable or another result:
// the caller gets one of its own.
tessera_tensor* Result(tessera::Tensor&& out) {
  tessera::Tensor value = out.BufferIsUnshared() ? std::move(out) : out.DeepCopy();
  auto* t = new tessera_tensor;
  t->dtype = value.dtype();
  t->shape = value.shape();
  t->byte_size = tessera::DataTypeHoldsStrings(t->dtype) ? 0 : value.TotalBytes();
  t->tensor = std::move(value);
  t->fetched = true;
  return t;
}

StatusOr<tessera::SessionConfig> Config(const char* config_json) {
  if (config_json == nullptr) return tessera::SessionConfig();
  StatusOr<tessera::SessionConfig> parsed = tessera::SessionConfig::FromJson(config_json);
  if (!parsed.ok()) return parsed.status().WithPrefix("session config: ");
  return parsed;
}

}  // namespace

extern "C" {

const char* tessera_version(void) { return "0.1.0"; }

tessera_status* tessera_status_new(void) { return new (std::nothrow) tessera_status; }
void tessera_status_delete(tessera_status* status) { delete status; }
tessera_code tessera_status_code(const tessera_status* status) {
  return status == nullptr ? TESSERA_INVALID_ARGUMENT : static_cast<tessera_code>(status->status.code());
}
const char* tessera_status_message(const tessera_status* status) {
  return status == nullptr ? "status is NULL" : status->message.c_str();
}

tessera_tensor* tessera_tensor_new(tessera_dtype dtype, const int64_t* dims, int num_dims, tessera_status* status) {
  return Guard<tessera_tensor*>(status, nullptr, [&]() -> tessera_tensor* {
    StatusOr<DataType> dt = FromC(dtype);
    StatusOr<tessera::TensorShape> shape = dt.ok() ? ShapeFromC(dims, num_dims) : dt.status();
    StatusOr<tessera::Tensor> t =
        shape.ok() ? tessera::Tensor::Allocate(tessera::CpuAllocator(), *dt, *shape) : shape.status();
    if (!t.ok()) {
      Set(status, t.status());
      return nullptr;
    }
    if (!tessera::DataTypeHoldsStrings(*dt) && t->TotalBytes() > 0) std::memset(t->raw_data(), 0, t->TotalBytes());
    auto* out = new tessera_tensor;
    out->dtype = *dt;
    out->shape = *shape;
    out->byte_size = tessera::DataTypeHoldsStrings(*dt) ? 0 : t->TotalBytes();
    out->tensor = std::move(*t);
    Set(status, Status::OK());
    return out;
  });
}

tessera_tensor* tessera_tensor_from_buffer(tessera_dtype dtype, const int64_t* dims, int num_dims, void* data,
                                           size_t length, void (*deallocator)(void*, size_t, void*), void* arg,
                                           tessera_status* status) {
  return Guard<tessera_tensor*>(status, nullptr, [&]() -> tessera_tensor* {
    StatusOr<DataType> dt = FromC(dtype);
    StatusOr<tessera::TensorShape> shape = dt.ok() ? ShapeFromC(dims, num_dims) : dt.status();
    Status s = shape.status();
    if (s.ok() && *dt == DataType::kString) s = errors::InvalidArgument("a string tensor cannot borrow a buffer");
    if (s.ok() && data == nullptr) s = NullArgument("data");
    StatusOr<size_t> need = s.ok() ? ElementBytes(*dt, *shape) : s;
    s = need.status();
    if (s.ok() && length != *need) {
      s = errors::InvalidArgument("a ", tessera::DataTypeName(*dt), " tensor of shape ", shape->DebugString(),
                                  " needs ", *need, " bytes, the buffer has ", length);
    }
    if (!s.ok()) {
      Set(status, s);
      return nullptr;
    }
    auto* out = new tessera_tensor;
    out->dtype = *dt;
    out->shape = *shape;
    out->byte_size = length;
    out->borrowed = data;
    out->borrowed_length = length;
    out->deallocator = deallocator;
    out->deallocator_arg = arg;
    Set(status, Status::OK());
    return out;
  });
}

void tessera_tensor_delete(tessera_tensor* tensor) {
  if (tensor == nullptr) return;
  if (tensor->borrowed != nullptr && tensor->deallocator != nullptr) {
    tensor->deallocator(tensor->borrowed, tensor->borrowed_length, tensor->deallocator_arg);
  }
  delete tensor;
}

tessera_dtype tessera_tensor_dtype(const tessera_tensor* tensor) {
  return tensor == nullptr ? static_cast<tessera_dtype>(0) : ToC(tensor->dtype);
}
int tessera_tensor_num_dims(const tessera_tensor* tensor) { return tensor == nullptr ? 0 : tensor->shape.rank(); }
int64_t tessera_tensor_dim(const tessera_tensor* tensor, int index) {
  if (tensor == nullptr || index < 0 || index >= tensor->shape.rank()) return -1;
  return tensor->shape.dim(index);
}
int64_t tessera_tensor_num_elements(const tessera_tensor* tensor) {
  return tensor == nullptr ? 0 : tensor->shape.num_elements();
}
size_t tessera_tensor_byte_size(const tessera_tensor* tensor) { return tensor == nullptr ? 0 : tensor->byte_size; }
void* tessera_tensor_data(const tessera_tensor* tensor) {
  if (tensor == nullptr || tessera::DataTypeHoldsStrings(tensor->dtype)) return nullptr;
  return tensor->borrowed != nullptr ? tensor->borrowed : tensor->tensor.raw_data();
}

const char* tessera_tensor_string(const tessera_tensor* tensor, int64_t index, size_t* length,
                                  tessera_status* status) {
  Status s;
  if (tensor == nullptr || length == nullptr) {
    s = NullArgument(tensor == nullptr ? "tensor" : "length");
  } else if (tensor->dtype != DataType::kString) {
    s = errors::InvalidArgument("the tensor holds ", tessera::DataTypeName(tensor->dtype), ", not strings");
  } else if (index < 0 || index >= tensor->shape.num_elements()) {
    s = errors::OutOfRange("string index ", index, " is outside [0, ", tensor->shape.num_elements(), ")");
  }
  Set(status, s);
  if (!s.ok()) return nullptr;
  const std::string& v = tensor->tensor.data<std::string>()[index];
  *length = v.size();
  return v.data();
}

void tessera_tensor_set_string(tessera_tensor* tensor, int64_t index, const char* bytes, size_t length,
                               tessera_status* status) {
  Guard<int>(status, 0, [&] {
    Status s;
    if (tensor == nullptr || (bytes == nullptr && length > 0)) {
      s = NullArgument(tensor == nullptr ? "tensor" : "bytes");
    } else if (tensor->dtype != DataType::kString) {
      s = errors::InvalidArgument("the tensor holds ", tessera::DataTypeName(tensor->dtype), ", not strings");
    } else if (index < 0 || index >= tensor->shape.num_elements()) {
      s = errors::OutOfRange("string index ", index, " is outside [0, ", tensor->shape.num_elements(), ")");
    } else if (tensor->fetched) {
      s = errors::FailedPrecondition("the tensor is a session's result, which is read-only");
    } else {
      tensor->tensor.data<std::string>()[index].assign(bytes == nullptr ? "" : bytes, length);
    }
    Set(status, s);
    return 0;
  });
}

namespace {

tessera_graph* MakeGraph(StatusOr<tessera::GraphSpec> def, tessera_status* status) {
  if (def.ok()) {
    // Validate now, so that a bad graph is an import error, not a session one.
    StatusOr<std::unique_ptr<tessera::Graph>> g = tessera::Graph::FromSpec(*def);
    if (!g.ok()) def = g.status();
  }
  if (!def.ok()) {
    Set(status, def.status());
    return nullptr;
  }
  auto* graph = new tessera_graph;
  graph->num_nodes = static_cast<int>(def->nodes.size());
  graph->def = std::move(*def);
  Set(status, Status::OK());
  return graph;
}

}  // namespace

tessera_graph* tessera_graph_import_json(const char* text, size_t length, tessera_status* status) {
  return Guard<tessera_graph*>(status, nullptr, [&]() -> tessera_graph* {
    if (text == nullptr) return MakeGraph(NullArgument("text"), status);
    return MakeGraph(tessera::GraphSpecFromJson(std::string_view(text, length)), status);
  });
}

tessera_graph* tessera_graph_import_graphdef(const void* bytes, size_t length, tessera_status* status) {
  return Guard<tessera_graph*>(status, nullptr, [&]() -> tessera_graph* {
    if (bytes == nullptr && length > 0) return MakeGraph(NullArgument("bytes"), status);
    std::string_view view(static_cast<const char*>(bytes), bytes == nullptr ? 0 : length);
    return MakeGraph(tessera::GraphSpecFromTensorFlow(view, tessera::SniffTensorFlowFormat(view)), status);
  });
}

tessera_graph* tessera_graph_import_file(const char* path, tessera_status* status) {
  return Guard<tessera_graph*>(status, nullptr, [&]() -> tessera_graph* {
    if (path == nullptr) return MakeGraph(NullArgument("path"), status);
    return MakeGraph(tessera::ReadGraphFile(path), status);
  });
}


void tessera_graph_delete(tessera_graph* graph) { delete graph; }
int tessera_graph_num_nodes(const tessera_graph* graph) { return graph == nullptr ? 0 : graph->num_nodes; }

tessera_session* tessera_session_new(const tessera_graph* graph, const char* config_json, tessera_status* status) {
  return Guard<tessera_session*>(status, nullptr, [&]() -> tessera_session* {
    if (graph == nullptr) {
      Set(status, NullArgument("graph"));
      return nullptr;
    }
    StatusOr<tessera::SessionConfig> config = Config(config_json);
    if (!config.ok()) {
      Set(status, config.status());
      return nullptr;
    }
    // The C API is its callers' composition point: every provider this library links.
    tessera::RegisterLinkedProviders();
    StatusOr<std::unique_ptr<tessera::Session>> session = tessera::Session::Create(*config, graph->def);
    if (!session.ok()) {
      Set(status, session.status());
      return nullptr;
    }
    auto* out = new tessera_session;
    out->session = std::move(*session);
    for (const tessera::PlacementRecord& r : out->session->placement()) {
      out->reasons.emplace_back(tessera::PlacementReasonName(r.reason));
    }
    Set(status, Status::OK());
    return out;
  });
}

void tessera_session_run(tessera_session* session, const char* const* feed_names, tessera_tensor* const* feeds,
                         int num_feeds, const char* const* fetch_names, tessera_tensor** fetches, int num_fetches,
                         const char* const* targets, int num_targets, tessera_status* status) {
  Guard<int>(status, 0, [&] {
    auto fail = [&](Status s) {
      Set(status, std::move(s));
      return 0;
    };
    if (session == nullptr) return fail(NullArgument("session"));
    if (num_feeds < 0 || num_fetches < 0 || num_targets < 0) return fail(errors::InvalidArgument("a count is negative"));
    if ((num_feeds > 0 && (feed_names == nullptr || feeds == nullptr)) ||
        (num_fetches > 0 && (fetch_names == nullptr || fetches == nullptr)) ||
        (num_targets > 0 && targets == nullptr)) {
      return fail(NullArgument("a names or tensors array with a non-zero count"));
    }
    for (int i = 0; i < num_fetches; ++i) fetches[i] = nullptr;
    if (session->closed.load()) return fail(errors::FailedPrecondition("Session has been closed."));
    std::vector<std::pair<std::string, tessera::Tensor>> in;
    for (int i = 0; i < num_feeds; ++i) {
      if (feed_names[i] == nullptr || feeds[i] == nullptr) return fail(NullArgument(tessera::StrCat("feed ", i).c_str()));
      StatusOr<tessera::Tensor> t = EngineTensor(feeds[i]);
      if (!t.ok()) return fail(t.status());
      in.emplace_back(feed_names[i], std::move(*t));
    }
    std::vector<std::string> out_names, target_names;
    for (int i = 0; i < num_fetches; ++i) {
      if (fetch_names[i] == nullptr) return fail(NullArgument(tessera::StrCat("fetch ", i).c_str()));
      out_names.emplace_back(fetch_names[i]);
    }
    for (int i = 0; i < num_targets; ++i) {
      if (targets[i] == nullptr) return fail(NullArgument(tessera::StrCat("target ", i).c_str()));
      target_names.emplace_back(targets[i]);
    }
    std::vector<tessera::Tensor> out;
    Status s = session->session->Run(in, out_names, target_names, &out);
    if (!s.ok()) return fail(s);
    in.clear();
    for (int i = 0; i < num_fetches; ++i) fetches[i] = Result(std::move(out[i]));
    Set(status, Status::OK());
    return 0;
  });
}

void tessera_session_close(tessera_session* session, tessera_status* status) {
  if (session == nullptr) {
    Set(status, NullArgument("session"));
    return;
  }
  if (!session->closed.exchange(true)) session->session->Close();
  Set(status, Status::OK());
}

void tessera_session_delete(tessera_session* session) { delete session; }

namespace {

const tessera::PlacementRecord* Record(const tessera_session* session, int index) {
  if (session == nullptr || index < 0 || index >= static_cast<int>(session->session->placement().size())) {
    return nullptr;
  }
  return &session->session->placement()[index];
}

}  // namespace

int tessera_session_num_placements(const tessera_session* session) {
  return session == nullptr ? 0 : static_cast<int>(session->session->placement().size());
}
const char* tessera_session_placement_node(const tessera_session* session, int index) {
  const tessera::PlacementRecord* r = Record(session, index);
  return r == nullptr ? nullptr : r->node.c_str();
}
const char* tessera_session_placement_op(const tessera_session* session, int index) {
  const tessera::PlacementRecord* r = Record(session, index);
  return r == nullptr ? nullptr : r->op.c_str();
}
const char* tessera_session_placement_device(const tessera_session* session, int index) {
  const tessera::PlacementRecord* r = Record(session, index);
  return r == nullptr ? nullptr : r->device.c_str();
}
const char* tessera_session_placement_reason(const tessera_session* session, int index) {
  return Record(session, index) == nullptr ? nullptr : session->reasons[index].c_str();
}

void tessera_set_log_sink(tessera_log_fn fn, void* arg) {
  Sink().Set(fn, arg);
  tessera::SetLogSink(fn == nullptr ? nullptr : &Sink());
}

}  // extern "C"

tessera_saved_model* tessera_saved_model_load(const char* dir, const char* const* tags, int num_tags,
                                              const char* config_json, tessera_status* status) {
  return Guard<tessera_saved_model*>(status, nullptr, [&]() -> tessera_saved_model* {
    if (dir == nullptr || num_tags < 0 || (num_tags > 0 && tags == nullptr)) {
      Set(status, NullArgument("dir or tags"));
      return nullptr;
    }
    std::set<std::string> tag_set;
    for (int i = 0; i < num_tags; ++i) {
      if (tags[i] == nullptr) {
        Set(status, NullArgument(tessera::StrCat("tag ", i).c_str()));
        return nullptr;
      }
      tag_set.insert(tags[i]);
    }
    if (num_tags == 0) tag_set = {"serve"};
    StatusOr<tessera::SessionConfig> config = Config(config_json);
    if (!config.ok()) {
      Set(status, config.status());
      return nullptr;
    }
    tessera::RegisterLinkedProviders();
    StatusOr<std::unique_ptr<tessera::SavedModelBundle>> bundle = tessera::LoadSavedModel(dir, tag_set, *config);
    if (!bundle.ok()) {
      Set(status, bundle.status());
      return nullptr;
    }
    auto* out = new tessera_saved_model;
    out->bundle = std::move(*bundle);
    Set(status, Status::OK());
    return out;
  });
}

void tessera_saved_model_run(const tessera_saved_model* model, const char* signature, const char* const* input_keys,
                             tessera_tensor* const* inputs, int num_inputs, const char* const* output_keys,
                             tessera_tensor** outputs, int num_outputs, tessera_status* status) {
  Guard<int>(status, 0, [&] {
    auto fail = [&](Status s) {
      Set(status, std::move(s));
      return 0;
    };
    if (model == nullptr || signature == nullptr) return fail(NullArgument("model or signature"));
    if (num_inputs < 0 || num_outputs < 0) return fail(errors::InvalidArgument("a count is negative"));
    if ((num_inputs > 0 && (input_keys == nullptr || inputs == nullptr)) ||
        (num_outputs > 0 && (output_keys == nullptr || outputs == nullptr))) {
      return fail(NullArgument("a keys or tensors array with a non-zero count"));
    }
    for (int i = 0; i < num_outputs; ++i) outputs[i] = nullptr;
    std::vector<std::pair<std::string, tessera::Tensor>> in;
    for (int i = 0; i < num_inputs; ++i) {
      if (input_keys[i] == nullptr || inputs[i] == nullptr) {
        return fail(NullArgument(tessera::StrCat("input ", i).c_str()));
      }
      StatusOr<tessera::Tensor> t = EngineTensor(inputs[i]);
      if (!t.ok()) return fail(t.status());
      in.emplace_back(input_keys[i], std::move(*t));
    }
    std::vector<std::string> keys;
    for (int i = 0; i < num_outputs; ++i) {
      if (output_keys[i] == nullptr) return fail(NullArgument(tessera::StrCat("output ", i).c_str()));
      keys.emplace_back(output_keys[i]);
    }
    if (keys.empty()) return fail(errors::InvalidArgument("name at least one output key"));
    std::vector<tessera::Tensor> out;
    Status s = model->bundle->Run(signature, in, keys, &out);
    if (!s.ok()) return fail(s);
    for (int i = 0; i < num_outputs; ++i) outputs[i] = Result(std::move(out[i]));
    Set(status, Status::OK());
    return 0;
  });
}

void tessera_saved_model_delete(tessera_saved_model* model) { delete model; }
