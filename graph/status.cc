#include "graph/status.h"

namespace actorflow {

const char* CodeName(Code code) {
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
  }
  return "Unknown";
}

Status::Status(Code code, std::string message) : code_(code), message_(std::move(message)) {
  if (code_ == Code::kOk) message_.clear();
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& prefix) const {
  if (ok()) return *this;
  return Status(code_, prefix + ": " + message_);
}

std::ostream& operator<<(std::ostream& os, const Status& status) {
  return os << status.ToString();
}

Status Cancelled(std::string m) { return Status(Code::kCancelled, std::move(m)); }
Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
Status DeadlineExceeded(std::string m) { return Status(Code::kDeadlineExceeded, std::move(m)); }
Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
Status AlreadyExists(std::string m) { return Status(Code::kAlreadyExists, std::move(m)); }
Status ResourceExhausted(std::string m) { return Status(Code::kResourceExhausted, std::move(m)); }
Status FailedPrecondition(std::string m) { return Status(Code::kFailedPrecondition, std::move(m)); }
Status Aborted(std::string m) { return Status(Code::kAborted, std::move(m)); }
Status OutOfRange(std::string m) { return Status(Code::kOutOfRange, std::move(m)); }
Status Unimplemented(std::string m) { return Status(Code::kUnimplemented, std::move(m)); }
Status Internal(std::string m) { return Status(Code::kInternal, std::move(m)); }
Status Unavailable(std::string m) { return Status(Code::kUnavailable, std::move(m)); }

}  // namespace actorflow
