// Status and StatusOr: how every fallible call in actorflow reports failure.
//
// A Status is OK or carries a TensorFlow-style code and a message that names the
// culprit (node, device, task, file:line:column) and, where it helps, says what to do.
// No exceptions cross a public API; `assert` is only for programmer bugs.
#ifndef ACTORFLOW_GRAPH_STATUS_H_
#define ACTORFLOW_GRAPH_STATUS_H_

#include <cassert>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

namespace actorflow {

enum class Code {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
};

// "InvalidArgument", "DeadlineExceeded", ... (TensorFlow's spelling).
const char* CodeName(Code code);

class Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message);

  static Status OK() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "InvalidArgument: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is `prefix + ": " + message()` (same code).
  Status WithContext(const std::string& prefix) const;

  bool operator==(const Status& other) const {
    return code_ == other.code_ && message_ == other.message_;
  }
  bool operator!=(const Status& other) const { return !(*this == other); }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

// Shorthands; each returns a Status with that code.
Status Cancelled(std::string message);
Status InvalidArgument(std::string message);
Status DeadlineExceeded(std::string message);
Status NotFound(std::string message);
Status AlreadyExists(std::string message);
Status ResourceExhausted(std::string message);
Status FailedPrecondition(std::string message);
Status Aborted(std::string message);
Status OutOfRange(std::string message);
Status Unimplemented(std::string message);
Status Internal(std::string message);
Status Unavailable(std::string message);

// A value or the Status that explains why there is none. Never holds an OK status
// without a value.
template <typename T>
class StatusOr {
 public:
  StatusOr(const Status& status) : status_(status) {  // NOLINT: implicit by design
    assert(!status.ok() && "StatusOr built from an OK status has no value");
    if (status_.ok()) status_ = Internal("StatusOr constructed from OK status without value");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // Precondition: ok().
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace actorflow

#define AF_CONCAT_INNER_(a, b) a##b
#define AF_CONCAT_(a, b) AF_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define AF_RETURN_IF_ERROR(expr)                       \
  do {                                                 \
    ::actorflow::Status af_status_ = (expr);           \
    if (!af_status_.ok()) return af_status_;           \
  } while (0)

// `AF_ASSIGN_OR_RETURN(auto x, F())`: declares/assigns from a StatusOr or returns its error.
#define AF_ASSIGN_OR_RETURN(lhs, expr) \
  AF_ASSIGN_OR_RETURN_IMPL_(AF_CONCAT_(af_statusor_, __LINE__), lhs, expr)
#define AF_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#endif  // ACTORFLOW_GRAPH_STATUS_H_
