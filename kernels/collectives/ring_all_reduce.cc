#include "kernels/collectives/ring_all_reduce.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

namespace tessera {
namespace {

// A piece is what one rendezvous message carries.
constexpr int64_t kPieceBytes = 512 << 10;
constexpr int kMaxPieces = 8;
// Reducing a piece this large is worth a hop to the pool; smaller ones run where they land.
constexpr int64_t kScheduleBytes = 64 << 10;

template <typename T>
T Add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Wraps on overflow, like the engine's other integer arithmetic.
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

// out[i] = mine[i] (op) theirs(i), with the op chosen outside the loop so it vectorises.
template <typename T, typename Theirs>
void ReduceInto(ReduceOp op, T* out, const T* mine, Theirs theirs, int64_t n) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      for (int64_t i = 0; i < n; ++i) out[i] = Add(mine[i], theirs(i));
      return;
    case ReduceOp::kMax:
      for (int64_t i = 0; i < n; ++i) out[i] = std::max(mine[i], theirs(i));
      return;
    case ReduceOp::kMin:
      for (int64_t i = 0; i < n; ++i) out[i] = std::min(mine[i], theirs(i));
      return;
  }
}

template <typename T>
class Ring : public std::enable_shared_from_this<Ring<T>> {
 public:
  Ring(const RingAllReduce::Params& p, Rendezvous* rendezvous, const Tensor& input, const Tensor& output,
       RingAllReduce::DoneCallback done)
      : p_(p), rendezvous_(rendezvous), input_(input), output_(output), done_(std::move(done)),
        n_(input.NumElements()), in_(input.data<T>()), out_(output.data<T>()) {
    int64_t max_chunk = (n_ + p_.size - 1) / p_.size;
    int64_t pieces = (max_chunk * static_cast<int64_t>(sizeof(T)) + kPieceBytes - 1) / kPieceBytes;
    pieces_ = static_cast<int>(std::clamp<int64_t>(pieces, 1, kMaxPieces));
    remaining_.store(pieces_);
  }

  void Start() {
    if (p_.size == 1) {
      if (out_ != in_) std::copy(in_, in_ + n_, out_);
      Finish(Status::OK());
      return;
    }
    for (int piece = 0; piece < pieces_; ++piece) RunStep(piece, 0);
  }

 private:
  struct Range {
    int64_t begin;
    int64_t end;
    int64_t size() const { return end - begin; }
  };

  int Mod(int x) const { return ((x % p_.size) + p_.size) % p_.size; }
  int Steps() const { return 2 * (p_.size - 1); }
  bool Scatter(int step) const { return step < p_.size - 1; }

  Range Piece(int chunk, int piece) const {
    int64_t c0 = n_ * chunk / p_.size, c1 = n_ * (chunk + 1) / p_.size;
    int64_t len = c1 - c0;
    return {c0 + len * piece / pieces_, c0 + len * (piece + 1) / pieces_};
  }
  int SendChunk(int step) const {
    return Scatter(step) ? Mod(p_.rank - step) : Mod(p_.rank + 1 - (step - (p_.size - 1)));
  }
  int RecvChunk(int step) const {
    return Scatter(step) ? Mod(p_.rank - step - 1) : Mod(p_.rank - (step - (p_.size - 1)));
  }
  std::string TensorName(int piece, int step) const { return StrCat(p_.name, "/piece", piece, "/step", step); }

  // What goes on the wire: a view of our buffer (no copy) or a float16 copy.
  Tensor WireValue(const Tensor& from, Range r) const {
    if (!p_.wire_float16) return from.Slice(r.begin, r.end);
    Tensor t(DataType::kHalf, TensorShape({r.size()}));
    const T* src = from.data<T>() + r.begin;
    Half* dst = t.data<Half>();
    for (int64_t i = 0; i < r.size(); ++i) dst[i] = FloatToHalf(static_cast<float>(src[i]));
    return t;
  }

  void RunStep(int piece, int step) {
    if (step == Steps()) {
      PieceDone(Status::OK());
      return;
    }
    int chunk = SendChunk(step);
    // The first step sends our own input; later ones what we reduced or gathered.
    const Tensor& source = step == 0 ? input_ : output_;
    Status s = rendezvous_->Send(
        Rendezvous::CreateKey(p_.device, p_.incarnation, p_.next_device, TensorName(piece, step)),
        WireValue(source, Piece(chunk, piece)));
    if (!s.ok()) {
      PieceDone(s);
      return;
    }
    auto self = this->shared_from_this();
    Rendezvous::Args args;
    // A gathered piece ends up in our output as it is: a transport between processes may
    // write it there directly.
    if (!Scatter(step) && !p_.wire_float16) {
      const Range r = Piece(RecvChunk(step), piece);
      args.into = output_.Slice(r.begin, r.end);
    }
    rendezvous_->RecvAsync(
        Rendezvous::CreateKey(p_.prev_device, p_.prev_incarnation, p_.device, TensorName(piece, step)), args,
        [self, piece, step](const Status& st, const Tensor& value) {
          if (!st.ok()) {
            self->PieceDone(st);
            return;
          }
          const int64_t bytes = value.TotalBytes();
          if (self->p_.pool != nullptr && bytes >= kScheduleBytes) {
            self->p_.pool->Schedule([self, piece, step, value] { self->OnReceived(piece, step, value); });
          } else {
            self->OnReceived(piece, step, value);
          }
        });
  }

  void OnReceived(int piece, int step, const Tensor& value) {
    Range r = Piece(RecvChunk(step), piece);
    DataType want = p_.wire_float16 ? DataType::kHalf : DataTypeToEnum<T>::value;
    if (value.dtype() != want || value.NumElements() != r.size()) {
      PieceDone(errors::InvalidArgument(
          "All-reduce '", p_.name, "': member ", Mod(p_.rank - 1), " on ", p_.prev_device, " sent ",
          value.NumElements(), " ", DataTypeName(value.dtype()), " elements where member ", p_.rank,
          " on ", p_.device, " expected ", r.size(), " ", DataTypeName(want),
          "; every member needs the same dtype and shape"));
      return;
    }
    T* out = out_ + r.begin;
    const int64_t n = r.size();
    if (Scatter(step)) {
      const T* mine = in_ + r.begin;
      if (p_.wire_float16) {
        const Half* h = value.data<Half>();
        ReduceInto(p_.op, out, mine, [h](int64_t i) { return static_cast<T>(HalfToFloat(h[i])); }, n);
      } else {
        const T* v = value.data<T>();
        ReduceInto(p_.op, out, mine, [v](int64_t i) { return v[i]; }, n);
      }
      if (step == p_.size - 2) FinishChunk(out, n);
    } else if (p_.wire_float16) {
      const Half* h = value.data<Half>();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(HalfToFloat(h[i]));
    } else if (value.data<T>() != out) {
      std::memcpy(out, value.data<T>(), n * sizeof(T));
    }
    RunStep(piece, step + 1);
  }

  // The owner of a fully reduced chunk applies what must happen once: the division of a
  // mean, and the rounding that float16 on the wire will apply to everyone else's copy,
  // so that every member ends with the same bits.
  void FinishChunk(T* data, int64_t n) const {
    if (p_.op == ReduceOp::kMean) {
      for (int64_t i = 0; i < n; ++i) data[i] = static_cast<T>(data[i] / static_cast<T>(p_.size));
    }
    if (p_.wire_float16) {
      for (int64_t i = 0; i < n; ++i) data[i] = static_cast<T>(HalfToFloat(FloatToHalf(static_cast<float>(data[i]))));
    }
  }

  void PieceDone(const Status& s) {
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (status_.ok()) status_ = s;
    }
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      Status first;
      {
        std::lock_guard<std::mutex> lock(mu_);
        first = status_;
      }
      Finish(first);
    }
  }

  void Finish(const Status& s) {
    RingAllReduce::DoneCallback done = std::move(done_);
    done(s);
  }

  const RingAllReduce::Params p_;
  Rendezvous* const rendezvous_;
  const Tensor input_;
  const Tensor output_;
  RingAllReduce::DoneCallback done_;
  const int64_t n_;
  const T* const in_;
  T* const out_;
  int pieces_ = 1;
  std::atomic<int> remaining_{0};
  std::mutex mu_;
  Status status_;  // guarded by mu_: the first error of any piece
};

}  // namespace

StatusOr<ReduceOp> ParseReduceOp(std::string_view name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "mean") return ReduceOp::kMean;
  if (name == "max") return ReduceOp::kMax;
  if (name == "min") return ReduceOp::kMin;
  return errors::InvalidArgument("Unknown reduction '", name, "'; want sum, mean, max or min");
}

void RingAllReduce::Start(const Params& params, Rendezvous* rendezvous, const Tensor& input,
                          const Tensor& output, DoneCallback done) {
  switch (input.dtype()) {
    case DataType::kFloat:
      std::make_shared<Ring<float>>(params, rendezvous, input, output, std::move(done))->Start();
      return;
    case DataType::kDouble:
      std::make_shared<Ring<double>>(params, rendezvous, input, output, std::move(done))->Start();
      return;
    case DataType::kInt32:
      std::make_shared<Ring<int32_t>>(params, rendezvous, input, output, std::move(done))->Start();
      return;
    default:
      done(errors::InvalidArgument("All-reduce of ", DataTypeName(input.dtype()),
                                   " is not supported; want float32, float64 or int32"));
  }
}

}  // namespace tessera
