#include "graph/platform/status.h"

namespace tessera {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kCancelled: return "Cancelled";
    case Code::kUnknown: return "Unknown";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kDeadlineExceeded: return "DeadlineExceeded";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kPermissionDenied: return "PermissionDenied";
    case Code::kResourceExhausted: return "ResourceExhausted";
    case Code::kFailedPrecondition: return "FailedPrecondition";
    case Code::kAborted: return "Aborted";
    case Code::kOutOfRange: return "OutOfRange";
    case Code::kUnimplemented: return "Unimplemented";
    case Code::kInternal: return "Internal";
    case Code::kUnavailable: return "Unavailable";
    case Code::kDataLoss: return "DataLoss";
    case Code::kUnauthenticated: return "Unauthenticated";
  }
  return "Unknown";
}

Status::Status(Code code, std::string message) {
  if (code != Code::kOk) state_ = std::make_shared<const State>(State{code, std::move(message)});
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return ok() ? kEmpty : state_->message;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return StrCat(CodeName(state_->code), ": ", state_->message);
}

Status Status::WithPrefix(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(state_->code, StrCat(prefix, state_->message));
}

Status Status::WithSuffix(std::string_view suffix) const {
  if (ok()) return *this;
  return Status(state_->code, StrCat(state_->message, suffix));
}

std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

}  // namespace tessera
