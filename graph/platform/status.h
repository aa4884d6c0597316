// Status and StatusOr<T>: how every fallible call in Tessera reports failure.
//
//   StatusOr<Tensor> t = session->RunOne("y");
//   if (!t.ok()) std::cerr << t.status() << "\n";   // "InvalidArgument: ..."
//
// No exception crosses the public API. Errors that come from user input carry a message
// naming the node, op and device involved. Status values are immutable and may be copied
// and read from any thread.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace tessera {

// TensorFlow's error codes, with its numbers.
enum class Code {
  kOk = 0,
  kCancelled,
  kUnknown,
  kInvalidArgument,
  kDeadlineExceeded,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,
  kFailedPrecondition,
  kAborted,
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kDataLoss,
  kUnauthenticated,
};

// "InvalidArgument", "NotFound", ... as TensorFlow spells them in its error classes.
std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message);

  static Status OK() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return ok() ? Code::kOk : state_->code; }
  const std::string& message() const;

  // "<Code>: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy with `suffix` appended to the message (the code is kept).
  Status WithSuffix(std::string_view suffix) const;
  // Returns a copy with `prefix` put before the message (the code is kept).
  Status WithPrefix(std::string_view prefix) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct State {
    Code code;
    std::string message;
  };
  // Null when OK, so that returning OK costs a pointer copy.
  std::shared_ptr<const State> state_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// `text` cut to `max_chars` with "..." after, so that a message never quotes a whole input.
inline std::string Excerpt(std::string_view text, size_t max_chars = 80) {
  if (text.size() <= max_chars) return std::string(text);
  return StrCat(text.substr(0, max_chars), "... (", text.size(), " bytes)");
}

namespace errors {
#define TESSERA_ERROR_FACTORY(Name)                          \
  template <typename... Args>                                \
  Status Name(const Args&... args) {                         \
    return Status(Code::k##Name, ::tessera::StrCat(args...)); \
  }
TESSERA_ERROR_FACTORY(Cancelled)
TESSERA_ERROR_FACTORY(Unknown)
TESSERA_ERROR_FACTORY(InvalidArgument)
TESSERA_ERROR_FACTORY(DeadlineExceeded)
TESSERA_ERROR_FACTORY(NotFound)
TESSERA_ERROR_FACTORY(AlreadyExists)
TESSERA_ERROR_FACTORY(PermissionDenied)
TESSERA_ERROR_FACTORY(ResourceExhausted)
TESSERA_ERROR_FACTORY(FailedPrecondition)
TESSERA_ERROR_FACTORY(Aborted)
TESSERA_ERROR_FACTORY(OutOfRange)
TESSERA_ERROR_FACTORY(Unimplemented)
TESSERA_ERROR_FACTORY(Internal)
TESSERA_ERROR_FACTORY(Unavailable)
TESSERA_ERROR_FACTORY(DataLoss)
TESSERA_ERROR_FACTORY(Unauthenticated)
#undef TESSERA_ERROR_FACTORY
}  // namespace errors

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : status_(status) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = errors::Internal("StatusOr built from an OK Status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // Precondition: ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  // `*std::move(s)` moves the value out, as `std::move(s).value()` does.
  T&& operator*() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace tessera

#define TESSERA_CONCAT_IMPL(a, b) a##b
#define TESSERA_CONCAT(a, b) TESSERA_CONCAT_IMPL(a, b)

#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::tessera::Status _tessera_status = (expr);        \
    if (!_tessera_status.ok()) return _tessera_status; \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

// ASSIGN_OR_RETURN(auto graph, Graph::FromSpec(def));
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(TESSERA_CONCAT(_tessera_statusor_, __LINE__), lhs, expr)
