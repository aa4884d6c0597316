#include "kernels/collectives/gloo_all_reduce.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <map>
#include <type_traits>

#include "graph/platform/logging.h"
#include "kernels/thread_pool.h"

#ifdef TESSERA_HAVE_GLOO
#include <gloo/allreduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#endif

namespace tessera {

#ifdef TESSERA_HAVE_GLOO
namespace {

// Gloo's rendezvous store over the step's Rendezvous: a key set here goes to every other
// member; a key is received from the member whose rank names it.
class RendezvousStore final : public gloo::rendezvous::Store {
 public:
  RendezvousStore(const GlooAllReduce::Params& p, Rendezvous* rendezvous) : p_(p), rendezvous_(rendezvous) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    Tensor value(DataType::kUInt8, TensorShape({static_cast<int64_t>(data.size())}));
    std::memcpy(value.raw_data(), data.data(), data.size());
    for (int peer = 0; peer < p_.size; ++peer) {
      if (peer == p_.rank) continue;
      Status s = rendezvous_->Send(KeyFrom(p_.rank, peer, key), value);
      if (!s.ok()) throw std::runtime_error(s.ToString());
    }
    received_[key] = data;
  }

  std::vector<char> get(const std::string& key) override {
    auto found = received_.find(key);
    if (found != received_.end()) return found->second;
    const int owner = OwnerOf(key);
    auto result = std::make_shared<std::promise<std::pair<Status, Tensor>>>();
    rendezvous_->RecvAsync(KeyFrom(owner, p_.rank, key), [result](const Status& s, const Tensor& t) {
      result->set_value({s, t});
    });
    auto future = result->get_future();
    if (future.wait_for(p_.timeout) != std::future_status::ready) {
      throw std::runtime_error(StrCat("no word from member ", owner, " (", p_.devices[owner], ") within ",
                                      p_.timeout.count(), " ms while connecting"));
    }
    auto [status, tensor] = future.get();
    if (!status.ok()) throw std::runtime_error(status.ToString());
    const char* bytes = static_cast<const char*>(tensor.raw_data());
    std::vector<char> data(bytes, bytes + tensor.TotalBytes());
    received_[key] = data;
    return data;
  }

  void wait(const std::vector<std::string>& keys) override {
    for (const std::string& key : keys) get(key);
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override { wait(keys); }

 private:
  // Gloo's keys: "rank_<r>" (the host name) and "<r>" (the addresses), both set by rank r.
  int OwnerOf(const std::string& key) const {
    std::string_view digits = key;
    if (digits.substr(0, 5) == "rank_") digits.remove_prefix(5);
    int rank = -1;
    if (!digits.empty() && digits.size() < 10 && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      rank = std::stoi(std::string(digits));
    }
    if (rank < 0 || rank >= p_.size) throw std::runtime_error(StrCat("Gloo asked for a key no member owns: '", key, "'"));
    return rank;
  }
  std::string KeyFrom(int from, int to, const std::string& key) const {
    return Rendezvous::CreateKey(p_.devices[from], p_.incarnations[from], p_.devices[to],
                                 StrCat(p_.name, "/gloo/", key));
  }

  const GlooAllReduce::Params& p_;
  Rendezvous* const rendezvous_;
  std::map<std::string, std::vector<char>> received_;
};

template <typename T>
T Add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;  // wraps, as the engine's own ring does
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

// Gloo's element-wise reduction: out[i] = a[i] (op) b[i].
template <typename T>
gloo::AllreduceOptions::Func ReduceFunction(ReduceOp op) {
  return [op](void* out_v, const void* a_v, const void* b_v, size_t n) {
    T* out = static_cast<T*>(out_v);
    const T* a = static_cast<const T*>(a_v);
    const T* b = static_cast<const T*>(b_v);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        for (size_t i = 0; i < n; ++i) out[i] = Add(a[i], b[i]);
        return;
      case ReduceOp::kMax:
        for (size_t i = 0; i < n; ++i) out[i] = std::max(a[i], b[i]);
        return;
      case ReduceOp::kMin:
        for (size_t i = 0; i < n; ++i) out[i] = std::min(a[i], b[i]);
        return;
    }
  };
}

// float16 on the wire: the partial sums are float16 too, each rounded as it is made.
gloo::AllreduceOptions::Func HalfReduceFunction(ReduceOp op) {
  return [op](void* out_v, const void* a_v, const void* b_v, size_t n) {
    Half* out = static_cast<Half*>(out_v);
    const Half* a = static_cast<const Half*>(a_v);
    const Half* b = static_cast<const Half*>(b_v);
    for (size_t i = 0; i < n; ++i) {
      const float x = HalfToFloat(a[i]), y = HalfToFloat(b[i]);
      out[i] = FloatToHalf(op == ReduceOp::kMax ? std::max(x, y) : op == ReduceOp::kMin ? std::min(x, y) : x + y);
    }
  };
}

}  // namespace

class GlooAllReduce::Impl {
 public:
  explicit Impl(Params p) : p_(std::move(p)) {
    auto pool = ThreadPool::Create("gloo", 1);
    if (pool.ok()) pool_ = std::move(*pool);
    else pool_status_ = pool.status();
  }

  void Start(Rendezvous* rendezvous, int64_t step_id, const Tensor& input, const Tensor& output, DoneCallback done) {
    if (!pool_) return done(pool_status_);
    pool_->Schedule([this, rendezvous, step_id, input, output, done = std::move(done)] {
      Status s;
      try {
        s = Reduce(rendezvous, step_id, input, output);
      } catch (const std::exception& e) {
        s = errors::Unavailable(p_.name, " (Gloo, member ", p_.rank, " of ", p_.size, " on ", p_.devices[p_.rank],
                                "): ", e.what());
      }
      // Gloo's context is of no more use after an error: the next reduction connects anew.
      if (!s.ok()) context_.reset();
      done(s);
    });
  }

 private:
  Status Reduce(Rendezvous* rendezvous, int64_t step_id, const Tensor& input, const Tensor& output) {
    if (!context_) {
      gloo::transport::tcp::attr attr;
      attr.hostname = p_.host;
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(p_.rank, p_.size);
      context->setTimeout(p_.timeout);
      RendezvousStore store(p_, rendezvous);
      context->connectFullMesh(store, device);
      context_ = std::move(context);
      // Once a group per session: which collective runs where is worth knowing.
      Log(LogSeverity::kInfo, StrCat(p_.name, ": member ", p_.rank, " of ", p_.size, " on ", p_.devices[p_.rank],
                                     " reduces over Gloo from ", p_.host));
    }
    const int64_t n = input.NumElements();
    if (output.raw_data() != input.raw_data()) std::memcpy(output.raw_data(), input.raw_data(), input.TotalBytes());
    if (n == 0) return Status::OK();
    gloo::AllreduceOptions opts(context_);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(static_cast<uint32_t>(step_id));
    opts.setTimeout(p_.timeout);
    switch (input.dtype()) {
      case DataType::kFloat:
        return p_.wire_float16 ? ReduceAsHalf<float>(opts, output) : ReduceAs<float>(opts, output);
      case DataType::kDouble:
        return p_.wire_float16 ? ReduceAsHalf<double>(opts, output) : ReduceAs<double>(opts, output);
      case DataType::kInt32:
        return ReduceAs<int32_t>(opts, output);
      default:
        return errors::InvalidArgument(p_.name, ": Gloo all-reduces float32, float64 or int32, not ",
                                       DataTypeName(input.dtype()));
    }
  }

  template <typename T>
  Status ReduceAs(gloo::AllreduceOptions& opts, const Tensor& data) {
    T* values = static_cast<T*>(data.raw_data());
    const int64_t n = data.NumElements();
    opts.setOutput(values, static_cast<size_t>(n));
    opts.setReduceFunction(ReduceFunction<T>(p_.op));
    gloo::allreduce(opts);
    if (p_.op == ReduceOp::kMean) {
      for (int64_t i = 0; i < n; ++i) values[i] = static_cast<T>(values[i] / static_cast<T>(p_.size));
    }
    return Status::OK();
  }

  template <typename T>
  Status ReduceAsHalf(gloo::AllreduceOptions& opts, const Tensor& data) {
    T* values = static_cast<T*>(data.raw_data());
    const int64_t n = data.NumElements();
    std::vector<Half> wire(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) wire[i] = FloatToHalf(static_cast<float>(values[i]));
    opts.setOutput(reinterpret_cast<uint16_t*>(wire.data()), static_cast<size_t>(n));
    opts.setReduceFunction(HalfReduceFunction(p_.op));
    gloo::allreduce(opts);
    for (int64_t i = 0; i < n; ++i) {
      float v = HalfToFloat(wire[i]);
      if (p_.op == ReduceOp::kMean) v = HalfToFloat(FloatToHalf(v / static_cast<float>(p_.size)));
      values[i] = static_cast<T>(v);
    }
    return Status::OK();
  }

  const Params p_;
  std::shared_ptr<gloo::Context> context_;  // used on pool_'s thread only
  Status pool_status_;
  // Last: destroyed first, waiting for the reductions in flight, which use the rest.
  std::unique_ptr<ThreadPool> pool_;
};

bool GlooAllReduce::Available() { return true; }

#else

class GlooAllReduce::Impl {
 public:
  explicit Impl(Params p) : p_(std::move(p)) {}
  void Start(Rendezvous*, int64_t, const Tensor&, const Tensor&, DoneCallback done) {
    done(errors::Unimplemented(p_.name, ": this build of Tessera has no Gloo (Debian's libgloo-dev); "
                               "use the engine's ring (communication_hint \"ring\")"));
  }

 private:
  const Params p_;
};

bool GlooAllReduce::Available() { return false; }

#endif

GlooAllReduce::GlooAllReduce(Params params) : impl_(std::make_unique<Impl>(std::move(params))) {}
GlooAllReduce::~GlooAllReduce() = default;

void GlooAllReduce::Start(Rendezvous* rendezvous, int64_t step_id, const Tensor& input, const Tensor& output,
                          DoneCallback done) {
  impl_->Start(rendezvous, step_id, input, output, std::move(done));
}

}  // namespace tessera
