#include "kernels/collectives/gloo_all_reduce.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <map>
#include <type_traits>

#include "graph/platform/logging.h"
#include "graph/platform/socket_address.h"
#include "kernels/thread_pool.h"

#ifdef TESSERA_HAVE_GLOO
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

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
    // Gloo reads a rank's host name ("rank_<r>") on the ranks above it only.
    const int first = key.rfind("rank_", 0) == 0 ? p_.rank + 1 : 0;
    for (int peer = first; peer < p_.size; ++peer) {
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

// The address of this machine that traffic toward `host` leaves from (a UDP socket's
// connect sends nothing): what a member binds to, since its own name may resolve to
// 127.0.1.1 (Debian) or to a virtual address (a Kubernetes service).
std::string LocalAddressToward(std::string_view named) {
  std::string host = Unbracketed(named);
  if (host.empty()) host = "127.0.0.1";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), "9", &hints, &found); rc != 0) {
    throw std::runtime_error(StrCat("cannot resolve '", host, "': ", ::gai_strerror(rc)));
  }
  std::string address;
  for (addrinfo* a = found; a != nullptr && address.empty(); a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
      address = AddressText(local);
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (address.empty()) throw std::runtime_error(StrCat("no route from this machine toward '", host, "'"));
  return address;
}

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
      // Gloo's context is of no more use after its error: the next reduction connects anew.
      if (!s.ok() && s.code() != Code::kInvalidArgument) context_.reset();
      done(s);
    });
  }

 private:
  Status Reduce(Rendezvous* rendezvous, int64_t step_id, const Tensor& input, const Tensor& output) {
    if (!context_) {
      gloo::transport::tcp::attr attr;
      attr.hostname = LocalAddressToward(p_.hosts[(p_.rank + 1) % p_.size]);
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(p_.rank, p_.size);
      context->setTimeout(p_.timeout);
      RendezvousStore store(p_, rendezvous);
      context->connectFullMesh(store, device);
      context_ = std::move(context);
      // On each connection (once a kernel, unless it fails): where a collective runs is
      // worth knowing.
      Log(LogSeverity::kInfo, StrCat(p_.name, ": member ", p_.rank, " of ", p_.size, " on ", p_.devices[p_.rank],
                                     " reduces over Gloo from ", attr.hostname));
    }
    const int64_t n = input.NumElements();
    // Gloo's stream is undone by members that send other sizes: they agree first.
    const int64_t dtype = static_cast<int64_t>(input.dtype());
    int64_t mine[4] = {n, -n, dtype, -dtype};
    gloo::AllreduceOptions agree(context_);
    agree.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    agree.setTag(static_cast<uint32_t>(step_id) ^ 0x80000000u);
    agree.setTimeout(p_.timeout);
    agree.setOutput(mine, 4);
    agree.setReduceFunction(ReduceFunction<int64_t>(ReduceOp::kMax));
    gloo::allreduce(agree);
    if (mine[0] != n || mine[1] != -n || mine[2] != dtype || mine[3] != -dtype) {
      // Every member sees the disagreement; the connections stay usable.
      return errors::InvalidArgument(p_.name, ": the members reduce different tensors (this member ", n, " ",
                                     DataTypeName(input.dtype()), " elements); every member needs the same dtype "
                                     "and element count");
    }
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
